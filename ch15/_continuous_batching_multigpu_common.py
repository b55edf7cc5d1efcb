"""Shared by `continuous_batching_multigpu` (every GPU): one replica of the decoder per GPU
behind a dispatcher, serving one offline batch of requests.

Each rank is one replica: the chapter's decoder (`SMALL`, bf16, max_seq 1024) and a serving
engine of 16 decode rows from `ch15._continuous_batching_common` (every prompt prefilled on
its own, every decode step at the full width: a request's tokens do not depend on what runs
beside it, so every dispatch policy gives the same tokens). One call serves 24 requests per
replica (48 on 2 GPUs) that all arrive at once, prompts 64-512 tokens and outputs 4-24: the
time until the last token of the slowest replica.

The batch is a fixed mix of lengths, evenly spread over those ranges; the seed draws which
request gets which lengths, and the prompt tokens. Every call asks the same work of every
side, which differ only in how they schedule it (lengths drawn afresh per call made a call's
time move with how long its draw happened to be).

Why this size. The first 2×H200 run served 32 requests per replica with outputs 16-256:
3.9 s a call static, 3.0 s with the shared queue, about 500 and 410 steps of the slowest
replica (~8 ms a step, prefills included: the step is host-paced and flat in its rows), so
only 8 calls a side fitted and the interval was too wide to store. A call's time is its
steps, so the outputs shrink: with 24 requests on 16 rows a replica still needs a second
wave, and a static batch lasts as long as its longest request, so static batching runs two
batches of ~23 steps where refilled rows finish in ~31 steps in all; the longest request is
1.7x the mean (1.9x at 16-256), the spread static batching pays for. Measured on 2 H200s
(2026-11-28): 0.40 s a call static, 0.31 s round-robin continuous, 0.29 s shared queue
(1.40x, NOISY at the default 4 s of timing a side, so not stored).

The pair runs on every GPU present (`bench run --gpus N` for fewer) and scales weakly: 24
requests per replica, so each replica's expected load is the same at every count, and the
tokens/s grow with the replicas; what grows with them is the chance that one replica draws
more than its share of long requests, which the round-robin split leaves to the slowest.

The dispatch policies (the sides):
- round-robin + static batches (baseline): request i goes to replica i mod world, which
  serves its share in static batches of 16; a batch runs until its longest request is done.
- round-robin + continuous batching (variant `_round_robin`): the same split, each replica
  refilling free rows at every step. Attributes the part of the gain the engine buys.
- shared queue, least-loaded dispatch (optimized): one queue for every replica, its head a
  counter in a TCPStore on rank 0. Before each step a replica with free rows claims that
  many requests from the head (one atomic add, ~0.1 ms); a full replica takes nothing. So
  each request goes to a replica that has room for it now, the replicas never wait for each
  other (no lockstep), and none runs dry while another has a backlog.

Output: the token table [requests, longest output] (-1 padded), assembled on every rank with
an all-reduce (max) of the rows each replica served, so both sides are compared whole.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import torch.distributed as dist

from ch15._continuous_batching_common import Engine
from ch15.decoder import SMALL, TINY, Decoder, DecoderConfig
from ch15.kv import ContiguousKV
from core.benchmark import BenchContext, Benchmark, Requirements, Workload
from core.goodput import Request



@dataclass(frozen=True)
class Sizes:
    cfg: DecoderConfig
    width: int  # decode rows per replica
    per_replica: int  # requests per call and replica (the call serves per_replica × world)
    prompt_len: tuple[int, int]
    output_len: tuple[int, int]


GPU = Sizes(cfg=replace(SMALL, max_seq=1024), width=16, per_replica=24, prompt_len=(64, 512),
            output_len=(4, 24))
CPU = Sizes(cfg=TINY, width=3, per_replica=6, prompt_len=(4, 24), output_len=(2, 16))


def spread(span: tuple[int, int], n: int, gen: torch.Generator, device: str) -> torch.Tensor:
    """`n` lengths evenly spread over the inclusive `span`, in an order drawn from `gen`: the
    same mix every call, a different assignment to requests."""
    lo, hi = span
    even = torch.linspace(lo, hi, n, dtype=torch.float64).round().to(torch.int64)
    return even.to(device)[torch.randperm(n, generator=gen, device=device)]


class SharedQueue:
    """One FIFO of the batch's requests (ids 0..n-1) for every replica: its head is a counter in
    a key-value store that all ranks reach (a `torch.distributed.TCPStore` hosted by rank 0, or
    any store with an atomic `add`). A replica with `k` free rows claims the next `k` requests
    with one atomic add; a full replica claims nothing, so work goes to whoever has room (the
    least-loaded replica), and no replica waits for another to decide."""

    def __init__(self, store, key: str, n: int):
        self.store, self.key, self.n = store, key, n

    def claim(self, k: int) -> range:
        """Up to `k` request ids, in queue order; an empty range once the queue is drained."""
        if k <= 0:
            return range(0)
        end = self.store.add(self.key, k)  # atomic: returns the counter after the add
        return range(min(end - k, self.n), min(end, self.n))


def free_rows(engine: Engine, width: int) -> int:
    """Rows a replica can take now: its width less what it runs and has queued."""
    return width - len(engine.running) - len(engine.queue)


def drain(engine: Engine, table: dict[int, list[int]]) -> None:
    """Step one replica until it holds nothing."""
    while not engine.idle():
        for request_id, token in engine.step():
            table[request_id].append(token)


def serve_pulling(engine: Engine, requests: list[Request], queue: SharedQueue, width: int
                  ) -> dict[int, list[int]]:
    """One replica's loop around the shared queue: before each step, claim as many requests as
    it has free rows; step; stop when the queue is drained and the replica is empty."""
    table: dict[int, list[int]] = {}
    drained = False
    while True:
        free = free_rows(engine, width)
        if not drained and free > 0:
            claimed = queue.claim(free)
            drained = len(claimed) < free
            for i in claimed:
                engine.add(requests[i])
                table[requests[i].id] = []
        if engine.idle():
            if drained:
                return table
            continue
        for request_id, token in engine.step():
            table[request_id].append(token)


def rank0_store(timeout_s: float = 300.0):
    """A TCPStore hosted by rank 0 on a free port, reached by every rank (the port travels
    with one broadcast). The shared queue's counter lives there."""
    import datetime
    import os

    host = os.environ.get("MASTER_ADDR", "127.0.0.1")
    timeout = datetime.timedelta(seconds=timeout_s)
    world, store = dist.get_world_size(), None
    if dist.get_rank() == 0:
        store = dist.TCPStore(host, 0, world, True, wait_for_workers=False, timeout=timeout)
    where = [host, store.port if store is not None else 0]
    dist.broadcast_object_list(where, src=0)
    if store is None:
        store = dist.TCPStore(where[0], where[1], world, False, timeout=timeout)
    dist.barrier()
    return store


class MultiReplicaBench(Benchmark):
    supports_cpu = True
    requires = Requirements(gpus=2, scales="weak")
    # On 2xH200 (2026-11-28) the default 4 s a side held ~10 calls of 0.29-0.40 s, and the
    # speedup's interval (1.21-1.63, host-paced steps) was too wide to store: 12 s a side,
    # as the single-GPU continuous_batching pair takes.
    time_cap_s = 12.0

    @property
    def sizes(self) -> Sizes:
        return GPU if self.ctx.is_cuda else CPU

    def setup(self, ctx: BenchContext) -> None:
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.model = Decoder(self.sizes.cfg, seed=ctx.seed, device=ctx.device)
        self.calls = 0  # every rank makes every call, so the count names the call on all

    def batch(self) -> int:
        """Requests per call: per_replica on every replica."""
        return self.sizes.per_replica * dist.get_world_size()

    def engine(self) -> Engine:
        raise NotImplementedError

    def make_kv(self) -> ContiguousKV:
        return ContiguousKV(self.sizes.cfg, self.sizes.width + 1, self.device)  # + scratch slot

    def make_inputs(self, seed: int) -> dict[str, torch.Tensor]:
        s, gen, n = self.sizes, self.generator(seed), self.batch()
        return {"prompts": torch.randint(0, s.cfg.vocab, (n, s.prompt_len[1]), generator=gen,
                                         device=self.device),
                "lengths": spread(s.prompt_len, n, gen, self.device),
                "max_new": spread(s.output_len, n, gen, self.device)}

    @staticmethod
    def requests(inputs: dict[str, torch.Tensor]) -> list[Request]:
        prompts, lengths, max_new = (inputs[k].tolist() for k in ("prompts", "lengths", "max_new"))
        return [Request(i, 0.0, tuple(p[:n]), m)
                for i, (p, n, m) in enumerate(zip(prompts, lengths, max_new))]

    def run(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        requests = self.requests(inputs)
        served = self.serve(requests)
        table = torch.full((len(requests), self.sizes.output_len[1]), -1, dtype=torch.int64)
        for request_id, tokens in served.items():
            table[request_id, :len(tokens)] = torch.tensor(tokens, dtype=torch.int64)
        table = table.to(self.device)
        dist.all_reduce(table, op=dist.ReduceOp.MAX)  # each row was served by one replica
        return table

    def serve(self, requests: list[Request]) -> dict[int, list[int]]:
        """This replica's part of the batch: {request id: its tokens} for the rows it served."""
        raise NotImplementedError

    def round_robin(self, requests: list[Request]) -> dict[int, list[int]]:
        engine, table = self.engine(), {}
        for request in requests[self.rank::self.world]:
            engine.add(request)
            table[request.id] = []
        drain(engine, table)
        return table

    def workload(self) -> Workload:
        # exact: every call serves the same mix of output lengths (spread())
        even = torch.linspace(*self.sizes.output_len, self.batch(), dtype=torch.float64).round()
        return Workload(units=float(even.sum()), unit_name="tokens")
