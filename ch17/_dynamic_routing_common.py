"""Shared by the `dynamic_routing` pair (simulated): a request router in front of N replicas.

This pair is a **simulation**. What it simulates: a fleet of `replicas` identical serving
engines (each one GPU running ch15's continuous-batching engine over `ch15.decoder`), and a
router that sends every arriving request to one of them. What is real: the step costs. In
setup() the decoder's prefill time (at several prompt lengths) and decode-step time (at
several batch sizes) are measured on the pair's device, once per process, with one function
(`measure_step_costs`); both sides simulate over that identical table, so the comparison
isolates the routing policy from measurement noise. run() then replays a seeded request trace
through the simulated fleet and returns the accounting that must not depend on the router
(every request's prompt and output tokens, served or explicitly rejected); `simulate()` also
returns each request's TTFT/TPOT, summarised by core.goodput into goodput under the SLO.

Each simulated replica runs what ch15's ContinuousEngine runs: at every iteration it admits
queued requests (FIFO, while it has free batch rows and KV room for the whole request),
prefills each admitted prompt, then runs one decode step for the sequences already running;
tokens reach the client when the iteration ends. An iteration's duration is the sum of the
measured costs of what it ran.

Why routing matters: request lengths are heavy-tailed (chat turns and long documents). Round-
robin gives every replica the same *number* of requests, not the same *work*; a replica that
draws a few long prompts falls behind, its queue grows, and the requests behind them miss
their TTFT target while other replicas idle. A queue- and KV-aware router spreads the work
itself: it sends each request to the replica, among those with KV room for it, whose queue
clears soonest (the iteration in flight plus the queued prefills, priced with the measured
costs). NVIDIA Dynamo's KV router weighs the same two things (active KV blocks, prefill
tokens waiting); the SGLang and vLLM routers' least-load policies count queued requests.

Regime: the offered load is set to `load` (0.9) times the fleet's capacity as estimated from
the measured costs (`Fleet.capacity_rps`: every replica running full batches), so the trace
sits just below saturation on every GPU, where routing decides goodput; at light load every
policy meets the SLO. Not at 1.0: there the queues grow without bound, so goodput depends on
the trace's length rather than on the policy (first H100 runs: round-robin met the SLO for
63% of a 600-request trace, 26% of a 3000-request one; queue-aware routing went from 1.03x
to 0.87x of it), and only rejecting requests helps. The SLO is likewise
stated in multiples of measured costs (see `Fleet.slo`), so the lesson does not depend on the
GPU model.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import torch

from ch15.decoder import SMALL, TINY, Decoder, DecoderConfig
from ch15.kv import ContiguousKV
from core.benchmark import BenchContext, Benchmark, Workload
from core.goodput import SLO, GoodputStats, RequestTiming, summarize


# ------------------------------------------------------------------------------------------
# measured step costs
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepCosts:
    """Seconds per prefill (by prompt length) and per decode step (by batch size), measured;
    linear interpolation in between, clamped at the ends."""

    prompt_lens: tuple[int, ...]
    prefill_s: tuple[float, ...]
    batch_sizes: tuple[int, ...]
    decode_s: tuple[float, ...]
    device: str = ""

    def prefill(self, prompt_len: int) -> float:
        return float(np.interp(prompt_len, self.prompt_lens, self.prefill_s))

    def decode(self, batch: int) -> float:
        return float(np.interp(batch, self.batch_sizes, self.decode_s)) if batch else 0.0


def _median_seconds(fn, device: torch.device, reps: int) -> float:
    fn()  # warm-up (allocator, kernels' first launch, CPU thread pools)
    fn()
    times = []
    for _ in range(reps):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


@torch.no_grad()
def measure_step_costs(model: Decoder, prompt_lens: tuple[int, ...], batch_sizes: tuple[int, ...],
                       reps: int = 5) -> StepCosts:
    """Time the decoder's prefill of one prompt of each length and one decode step of each
    batch size, as ch15's engines run them (a prompt prefilled alone; a decode step over a
    fixed max_len KV window, so its cost does not depend on the sequences' lengths)."""
    cfg, device = model.cfg, model.device
    width = max(batch_sizes)
    kv = ContiguousKV(cfg, width, device)
    slots = torch.tensor([kv.allocate(cfg.max_seq) for _ in range(width)], device=device)
    gen = torch.Generator(device=device).manual_seed(0)
    prefill = []
    for n in prompt_lens:
        tokens = torch.randint(0, cfg.vocab, (1, n), generator=gen, device=device)
        prefill.append(_median_seconds(lambda: model.prefill(tokens, kv, slots[:1]), device, reps))
    decode = []
    for b in batch_sizes:
        tokens = torch.randint(0, cfg.vocab, (b,), generator=gen, device=device)
        positions = torch.full((b,), cfg.max_seq // 2, device=device)
        decode.append(_median_seconds(
            lambda: model.decode(tokens, kv, slots[:b], positions, max_len=cfg.max_seq), device, reps))
    return StepCosts(tuple(prompt_lens), tuple(prefill), tuple(batch_sizes), tuple(decode), str(device))


@lru_cache(maxsize=4)
def shared_step_costs(cfg: DecoderConfig, device: str, seed: int, prompt_lens: tuple[int, ...],
                      batch_sizes: tuple[int, ...]) -> StepCosts:
    """Measured once per process and device: every side of the pair simulates over this
    same table (the harness sets both sides up in one process)."""
    model = Decoder(cfg, seed=seed, device=device)
    costs = measure_step_costs(model, prompt_lens, batch_sizes)
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return costs


# ------------------------------------------------------------------------------------------
# the simulated fleet
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SimRequest:
    id: int
    arrival_s: float
    prompt: int  # prompt tokens
    max_new: int  # output tokens


@dataclass
class Sequence:
    request: SimRequest
    token_s: list[float] = field(default_factory=list)  # when each token reached the client

    @property
    def done(self) -> bool:
        return len(self.token_s) >= self.request.max_new


class Replica:
    """One simulated engine: ch15's continuous batching, timed by the measured costs."""

    def __init__(self, costs: StepCosts, width: int, kv_tokens: int):
        self.costs, self.width, self.kv_tokens = costs, width, kv_tokens
        self.queue: deque[SimRequest] = deque()
        self.running: list[Sequence] = []
        self.kv_used = 0  # tokens reserved by running and in-flight requests
        self.busy_until: float | None = None  # end of the iteration in flight, None when idle
        self._admitted: list[SimRequest] = []
        self._decoded: list[Sequence] = []

    # -- what a router may look at --------------------------------------------------------
    def kv_short(self, request: SimRequest) -> bool:
        """True when the request would wait for KV room: what this replica holds and has
        queued, plus the request, exceeds its KV capacity."""
        queued = sum(r.prompt + r.max_new for r in self.queue)
        return self.kv_used + queued + request.prompt + request.max_new > self.kv_tokens

    def predicted_ttft(self, request: SimRequest, now: float) -> float:
        """This request's TTFT if it joined the queue now, priced with the measured costs: the
        iteration in flight ends, every queued prompt ahead is prefilled, then its own,
        alongside one decode step of the running batch; if the batch rows (or the KV) are full,
        it first waits for as many running sequences to finish as it needs rows."""
        wait = max(0.0, (self.busy_until or now) - now)
        ahead = sum(self.costs.prefill(r.prompt) for r in self.queue)
        step = self.costs.decode(len(self.running))
        must_finish = len(self.running) + len(self.queue) + 1 - self.width  # rows to free first
        if self.running and self.kv_short(request):
            must_finish = max(must_finish, 1)
        if self.running and must_finish > 0:
            remaining = sorted(s.request.max_new - len(s.token_s) for s in self.running)
            wait += remaining[min(must_finish, len(remaining)) - 1] * step
        return wait + ahead + self.costs.prefill(request.prompt) + step

    # -- the engine ------------------------------------------------------------------------
    def start(self, now: float) -> None:
        """Begin an iteration at `now` if there is work: admit, prefill, decode."""
        admitted = []
        while (self.queue and len(self.running) + len(admitted) < self.width
               and self.kv_used + self.queue[0].prompt + self.queue[0].max_new <= self.kv_tokens):
            request = self.queue.popleft()
            self.kv_used += request.prompt + request.max_new
            admitted.append(request)
        if not admitted and not self.running:
            self.busy_until = None
            return
        cost = sum(self.costs.prefill(r.prompt) for r in admitted) + self.costs.decode(len(self.running))
        self._admitted, self._decoded = admitted, list(self.running)
        self.busy_until = now + cost

    def finish(self, now: float) -> list[Sequence]:
        """End the iteration in flight at `now`: its tokens reach the clients; returns the
        sequences that completed."""
        for seq in self._decoded:
            seq.token_s.append(now)
        for request in self._admitted:
            self.running.append(Sequence(request, [now]))  # the first token comes from prefill
        self._admitted, self._decoded = [], []
        done = [s for s in self.running if s.done]
        for seq in done:
            self.running.remove(seq)
            self.kv_used -= seq.request.prompt + seq.request.max_new
        self.busy_until = None
        return done


class Router:
    """Picks a replica for each arriving request, or None to reject it."""

    def route(self, request: SimRequest, replicas: list[Replica], now: float) -> int | None:
        raise NotImplementedError


@dataclass
class SimResult:
    served: list[RequestTiming]
    rejected: list[int]  # request ids the router turned away
    replica_of: dict[int, int]  # request id -> replica


def simulate(requests: list[SimRequest], router: Router, costs: StepCosts, replicas: int,
             width: int, kv_tokens: int) -> SimResult:
    """Discrete-event simulation of the fleet over `requests` (sorted by arrival).
    Deterministic: the same requests, router and costs give the same result."""
    fleet = [Replica(costs, width, kv_tokens) for _ in range(replicas)]
    served: list[RequestTiming] = []
    rejected: list[int] = []
    replica_of: dict[int, int] = {}
    pending = deque(requests)
    while True:
        busy = [(r.busy_until, k) for k, r in enumerate(fleet) if r.busy_until is not None]
        next_done, k_done = min(busy) if busy else (float("inf"), -1)
        if pending and pending[0].arrival_s <= next_done:
            request = pending.popleft()
            now = request.arrival_s
            k = router.route(request, fleet, now)
            if k is None:
                rejected.append(request.id)
                continue
            replica_of[request.id] = k
            fleet[k].queue.append(request)
            if fleet[k].busy_until is None:
                fleet[k].start(now)
        elif busy:
            replica = fleet[k_done]
            for seq in replica.finish(next_done):
                r = seq.request
                served.append(RequestTiming(r.id, r.arrival_s, seq.token_s, [0] * len(seq.token_s)))
            replica.start(next_done)
        else:
            break
    served.sort(key=lambda t: t.id)
    return SimResult(served, rejected, replica_of)


# ------------------------------------------------------------------------------------------
# the benchmark
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fleet:
    """One side of the GPU/CPU split: model, fleet, trace and the SLO's multipliers."""

    cfg: DecoderConfig
    replicas: int
    width: int  # batch rows per replica
    kv_tokens: int  # KV capacity per replica, in tokens
    requests: int
    short: tuple[tuple[int, int], tuple[int, int]]  # chat turns: (prompt range, output range)
    long: tuple[tuple[int, int], tuple[int, int]]  # long documents
    long_share: float
    prompt_lens: tuple[int, ...]  # where prefill is measured
    batch_sizes: tuple[int, ...]  # where a decode step is measured
    ttft_prefills: float  # SLO: TTFT ≤ this many prefills of the longest prompt
    tpot_steps: float  # SLO: TPOT ≤ this many decode steps at full width
    load: float = 0.9  # offered load / the fleet's estimated capacity (see the module doc)

    def slo(self, costs: StepCosts) -> SLO:
        return SLO(ttft_s=self.ttft_prefills * costs.prefill(self.long[0][1]),
                   tpot_s=self.tpot_steps * costs.decode(self.width))

    def capacity_rps(self, costs: StepCosts) -> float:
        """Requests/s the fleet sustains if every replica ran full batches: per request, its
        prefill plus its share of full-width decode steps."""
        def mean(lo_hi):
            return (lo_hi[0] + lo_hi[1]) / 2
        work = 0.0
        for share, (prompt, output) in ((1 - self.long_share, self.short), (self.long_share, self.long)):
            decode_share = mean(output) * costs.decode(self.width) / self.width
            work += share * (costs.prefill(round(mean(prompt))) + decode_share)
        return self.replicas / work


GPU_FLEET = Fleet(cfg=SMALL, replicas=4, width=32, kv_tokens=64 * 1024, requests=600,
                  short=((64, 512), (32, 256)), long=((1024, 3072), (256, 768)), long_share=0.2,
                  prompt_lens=(64, 256, 1024, 2048, 3072), batch_sizes=(1, 4, 8, 16, 32),
                  ttft_prefills=6.0, tpot_steps=3.0)
CPU_FLEET = Fleet(cfg=TINY, replicas=3, width=4, kv_tokens=512, requests=80,
                  short=((4, 24), (4, 16)), long=((48, 96), (16, 32)), long_share=0.2,
                  prompt_lens=(4, 16, 48, 96), batch_sizes=(1, 2, 4),
                  ttft_prefills=6.0, tpot_steps=3.0)


GOODPUT_TRACE_FACTOR = 5  # the goodput trace is this many times run()'s (see simulated_replay)


class RoutingBench(Benchmark):
    """The stem's common contract. run() = one simulated replay of the trace."""

    supports_cpu = True
    description = "simulated: request routing over N replicas, on decoder step costs measured on this device"
    # gated on the simulated fleet's goodput (core.goodput over simulated_replay); the time
    # column is the simulator's own Python, reported beside it
    goal = "goodput"
    simulated = ("request routing over a fleet of replicas: a discrete-event simulation of "
                 "ch15's continuous batching, priced with decoder step costs measured on this device")
    cpu_bound = ("the timed work is the routing simulation's Python (simulated fleet); the "
                 "router's gain is the simulated goodput, see ch17/README.md")
    seed_sensitive = True

    def router(self) -> Router:
        raise NotImplementedError

    @property
    def fleet(self) -> Fleet:
        return GPU_FLEET if self.ctx.is_cuda else CPU_FLEET

    def setup(self, ctx: BenchContext) -> None:
        f = self.fleet
        self.costs = shared_step_costs(f.cfg, ctx.device, ctx.seed, f.prompt_lens, f.batch_sizes)
        self.slo = f.slo(self.costs)
        self.rate_rps = f.load * f.capacity_rps(self.costs)

    def make_inputs(self, seed: int, requests: int | None = None) -> dict[str, torch.Tensor]:
        """The trace, rate-free: unit-rate Poisson gaps (scaled by the measured rate in run()),
        and each request's class and lengths; `requests` of them (default: the fleet's)."""
        f, gen = self.fleet, self.generator(seed)
        n = requests or f.requests
        is_long = torch.rand(n, generator=gen, device=self.device) < f.long_share

        def draw(lo_hi_short, lo_hi_long):
            u = torch.rand(n, generator=gen, device=self.device)
            lo = torch.where(is_long, lo_hi_long[0], lo_hi_short[0])
            hi = torch.where(is_long, lo_hi_long[1], lo_hi_short[1])
            return (lo + u * (hi - lo + 1)).floor().long().clamp(max=hi)

        gaps = -torch.log1p(-torch.rand(n, generator=gen, device=self.device, dtype=torch.float64))
        return {"unit_arrivals": gaps.cumsum(0) - gaps[0],
                "prompt": draw(f.short[0], f.long[0]), "max_new": draw(f.short[1], f.long[1])}

    def requests(self, inputs: dict[str, torch.Tensor]) -> list[SimRequest]:
        arrivals = (inputs["unit_arrivals"] / self.rate_rps).tolist()
        self.arrival_of = dict(enumerate(arrivals))  # for the timings of rejected requests
        return [SimRequest(i, a, p, m) for i, (a, p, m) in
                enumerate(zip(arrivals, inputs["prompt"].tolist(), inputs["max_new"].tolist()))]

    def simulate(self, inputs: dict[str, torch.Tensor]) -> SimResult:
        f = self.fleet
        return simulate(self.requests(inputs), self.router(), self.costs, f.replicas, f.width, f.kv_tokens)

    def timings(self, result: SimResult) -> list[RequestTiming]:
        """Every request's (virtual) token times; a rejected one has none."""
        turned_away = [RequestTiming(i, self.arrival_of[i], [], []) for i in result.rejected]
        return sorted(result.served + turned_away, key=lambda t: t.id)

    def stats(self, result: SimResult) -> GoodputStats:
        """core.goodput's summary: rejected requests count as misses."""
        return summarize(self.timings(result), self.slo)

    def simulated_replay(self, seed: int) -> list[RequestTiming]:
        """Goal goodput, simulated: the fleet serves a trace of `seed` in virtual time,
        GOODPUT_TRACE_FACTOR times as long as run()'s. Virtual time has no noise, but one
        600-request trace is a small sample of the arrival process: the goodput ratio of three
        such traces spanned 0.95-1.26 on the first H100 run. Five times the requests narrow
        that spread by about sqrt(5), for a second of simulation per replay."""
        return self.timings(self.simulate(self.make_inputs(seed, GOODPUT_TRACE_FACTOR * self.fleet.requests)))

    def run(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The accounting every router must agree on: per request [prompt tokens, output
        tokens served + output tokens declined]. Nothing lost, nothing half-served."""
        result = self.simulate(inputs)
        emitted = {t.id: len(t.token_s) for t in result.served}
        declined = set(result.rejected)
        rows = [[r.prompt, emitted.get(r.id, 0) + (r.max_new if r.id in declined else 0)]
                for r in self.requests(inputs)]
        return torch.tensor(rows, dtype=torch.long, device=self.device)

    def workload(self) -> Workload:
        return Workload(units=self.fleet.requests, unit_name="simulated requests")


class RoundRobin(Router):
    def __init__(self) -> None:
        self.next = 0

    def route(self, request: SimRequest, replicas: list[Replica], now: float) -> int:
        k, self.next = self.next, (self.next + 1) % len(replicas)
        return k


class QueueAndKVAware(Router):
    """Queue- and KV-aware: among the replicas with KV room for the request, the one whose
    queue clears soonest (the iteration in flight plus the queued prefills, priced with the
    measured costs); a replica short of KV is chosen only when all are."""

    def route(self, request: SimRequest, replicas: list[Replica], now: float) -> int:
        return min(range(len(replicas)), key=lambda k: (replicas[k].kv_short(request),
                                                        replicas[k].predicted_ttft(request, now), k))


class AdmissionControl(QueueAndKVAware):
    """Queue- and KV-aware routing, and early rejection: a request whose predicted TTFT on
    the chosen replica already exceeds the SLO is turned away at once (the client can retry
    elsewhere) instead of queueing, missing its target and delaying the requests behind it."""

    def __init__(self, slo: SLO):
        self.slo = slo

    def route(self, request: SimRequest, replicas: list[Replica], now: float) -> int | None:
        k = super().route(request, replicas, now)
        return k if replicas[k].predicted_ttft(request, now) <= self.slo.ttft_s else None


def report(bench: RoutingBench, seed: int = 0) -> str:
    """One line of simulated goodput for `bench` (set up) on the trace of `seed`."""
    result = bench.simulate(bench.make_inputs(seed))
    s = bench.stats(result)
    return (f"{type(bench).__name__:>18}: simulated goodput {s.goodput_rps:7.2f} req/s "
            f"({s.met}/{bench.fleet.requests} met {bench.slo}, {len(result.rejected)} rejected), "
            f"TTFT p50/p99 {s.ttft_p50_s * 1e3:.0f}/{s.ttft_p99_s * 1e3:.0f} ms, "
            f"TPOT p50/p99 {s.tpot_p50_s * 1e3:.1f}/{s.tpot_p99_s * 1e3:.1f} ms")


if __name__ == "__main__":  # python -m ch17._dynamic_routing_common: each side's simulated goodput
    from ch17.baseline_dynamic_routing import RoundRobinRouting
    from ch17.optimized_dynamic_routing import LoadAwareRouting
    from ch17.optimized_dynamic_routing_admission import LoadAwareWithAdmission

    context = BenchContext(seed=0, device="cuda" if torch.cuda.is_available() else "cpu")
    for side in (RoundRobinRouting(), LoadAwareRouting(), LoadAwareWithAdmission()):
        side.ctx = context
        side.setup(context)
        print(report(side, seed=1))
    print(f"measured step costs ({side.costs.device}): {side.costs}")
