"""The decode loop of `integrated_kv_cache`'s optimized sides: a paged cache, graph replays.

Each call reserves every sequence's blocks for prompt + output up front (`PagedKV.allocate`,
the host bookkeeping an engine does on admission) and frees them at the end; prefill writes
the prompts' K/V in place (eager: one call). Each decode step copies the fed tokens and
positions into static buffers and replays the CUDA graph of its read-length bucket: the
step reads the cache to its length rounded up to `bucket` tokens (the extra positions are
masked), so a few graphs cover a call (one here: 576, for the steps at 513..576; a longer
call adds one per 64 tokens), and a step reads at most bucket - 1 masked tokens more than
eager's exact length.
Graphs are captured in setup() from warm-up runs on a side stream, into one memory pool.
On the CPU the same steps run eagerly.
"""
from __future__ import annotations

import torch

from ch15.kv import PagedKV
from ch20._integrated_kv_cache_common import DecodeLoop, Int8PagedKV, round_up


class GraphedPagedDecode(DecodeLoop):
    int8_kv = True

    def prepare(self) -> None:
        cfg, s, dev = self.cfg, self.shape, self.device
        blocks = s.batch * -(-s.total // s.block) + 1  # + the null block
        if self.int8_kv:
            self.kv = Int8PagedKV(cfg, blocks, s.batch, dev, block_size=s.block)
        else:
            self.kv = PagedKV(cfg, blocks, s.batch, dev, block_size=s.block)
        self.slots = torch.arange(s.batch, device=dev)
        self.tokens = torch.zeros(s.batch, dtype=torch.long, device=dev)  # static inputs
        self.positions = torch.zeros(s.batch, dtype=torch.long, device=dev)
        self.graphs: dict[int, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}
        if self.ctx.is_cuda:
            pool = torch.cuda.graph_pool_handle()
            first, last = round_up(s.prompt + 1, s.bucket), round_up(s.total, s.bucket)
            for length in range(last, first - 1, -s.bucket):  # largest first: the rest reuse its pool
                self.graphs[length] = self.capture(length, pool)

    @torch.no_grad()
    def capture(self, length: int, pool) -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):  # cuBLAS handles and workspaces exist before capture
                self.model.decode(self.tokens, self.kv, self.slots, self.positions, max_len=length)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            logits = self.model.decode(self.tokens, self.kv, self.slots, self.positions, max_len=length)
        return graph, logits

    def step(self, tokens: torch.Tensor, pos: int) -> torch.Tensor:
        length = round_up(pos + 1, self.shape.bucket)
        self.tokens.copy_(tokens)
        self.positions.fill_(pos)
        if not self.graphs:  # CPU: the same step, eager
            return self.model.decode(self.tokens, self.kv, self.slots, self.positions, max_len=length)
        graph, logits = self.graphs[length]
        graph.replay()
        return logits

    @torch.no_grad()
    def run(self, stream: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s = self.shape
        held = [self.kv.allocate(s.total) for _ in range(s.batch)]  # slots 0..batch-1
        try:
            self.model.prefill(stream[:, :s.prompt], self.kv, self.slots)
            scores = []
            for t in range(s.steps):
                pos = s.prompt + t
                logits = self.step(stream[:, pos], pos)
                scores.append(self.score(logits, stream[:, pos + 1]))
            return torch.stack(scores), logits.float().clone()
        finally:
            for slot in held:
                self.kv.free(slot)

    def teardown(self) -> None:
        self.graphs = {}
