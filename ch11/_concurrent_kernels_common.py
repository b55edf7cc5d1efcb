"""Shared by `concurrent_kernels`: five independent small kernels of one decode step.

Beside its main GEMMs, a serving engine's step runs small, unrelated operations, each too
small to fill an H100's 132 SMs on its own, and none the same shape as another (so there is
nothing to batch):

    sampling softmax   fp32 softmax over 64 rows of a 32000-token vocabulary (64 CTAs)
    layer norm         bf16 LayerNorm of 256 tokens × 4096
    embedding gather   8192 rows of a 65536 × 1024 bf16 table
    small GEMM         bf16 [128, 4096] · [4096, 4096] (a few output tiles)
    column reduction   fp32 sum over 32768 rows of 512 columns (a statistics pass)

Both sides run the same torch operations on the same values, so their outputs are
bit-identical; they differ in the streams the kernels are enqueued on. Each side takes tens
of µs, about what the host needs to launch it, so the pair is timed by CUDA-graph replay
(`timing_mode = "graph"`), as a serving engine replays its step: the GPU's time, not the
host's. A captured graph keeps the streams' fork and join as parallel branches.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

VOCAB, SAMPLED = 32000, 64
NORM_TOKENS, HIDDEN = 256, 4096
TABLE_ROWS, EMBED, LOOKUPS = 65536, 1024, 8192
GEMM_M = 128
STAT_ROWS, STAT_COLS = 32768, 512

Inputs = dict[str, torch.Tensor]


class ConcurrentKernelsBench(Benchmark):
    requires = Requirements(cuda=True)
    timing_mode = "graph"
    tolerance = Tolerance(rtol=0.0, atol=0.0)  # the same kernels on the same values

    def setup(self, ctx: BenchContext) -> None:
        gen = self.generator(ctx.seed)
        self.table = self.randn(TABLE_ROWS, EMBED, gen=gen, dtype=torch.bfloat16)
        self.norm_weight = self.randn(HIDDEN, gen=gen, dtype=torch.bfloat16)
        self.norm_bias = self.randn(HIDDEN, gen=gen, dtype=torch.bfloat16)
        self.proj = (self.randn(HIDDEN, HIDDEN, gen=gen) * HIDDEN ** -0.5).to(torch.bfloat16)

    def make_inputs(self, seed: int) -> Inputs:
        gen = self.generator(seed)
        return {"logits": self.randn(SAMPLED, VOCAB, gen=gen),
                "hidden": self.randn(NORM_TOKENS, HIDDEN, gen=gen, dtype=torch.bfloat16),
                "ids": torch.randint(0, TABLE_ROWS, (LOOKUPS,), generator=gen, device=self.device),
                "small": self.randn(GEMM_M, HIDDEN, gen=gen, dtype=torch.bfloat16),
                "stats": self.randn(STAT_ROWS, STAT_COLS, gen=gen)}

    def kernels(self, x: Inputs) -> list[Callable[[], torch.Tensor]]:
        """The five independent operations, each returning its own new tensor."""
        return [lambda: torch.softmax(x["logits"], dim=-1),
                lambda: F.layer_norm(x["hidden"], (HIDDEN,), self.norm_weight, self.norm_bias),
                lambda: self.table.index_select(0, x["ids"]),
                lambda: x["small"] @ self.proj,
                lambda: x["stats"].sum(dim=0)]

    def workload(self) -> Workload:
        moved = (2 * SAMPLED * VOCAB * 4 + 2 * NORM_TOKENS * HIDDEN * 2 + 2 * LOOKUPS * EMBED * 2
                 + (2 * GEMM_M * HIDDEN + HIDDEN * HIDDEN) * 2 + STAT_ROWS * STAT_COLS * 4)
        return Workload(bytes=moved, flops=2 * GEMM_M * HIDDEN * HIDDEN, flops_dtype="bf16")
