"""Shared by the `kernel_fusion` pair: scale, shift, GELU, then normalize by the absolute max.

y = GELU(x · w + b), out = y / max|y|, on 2048 × 8192 bf16 activations (32 MiB) with a
per-channel w and b (setup): the pattern of dynamic absmax scaling before quantization or of
an activation-statistics step. Each call's activations are make_inputs' data. Eager math
rounds every intermediate to bf16; a fused kernel keeps them in fp32, so sides differ by
bf16 roundings: the outputs are ≤ 1 in magnitude, and the default bf16 tolerance (1e-2
absolute there) covers a couple of roundings.
"""
from __future__ import annotations

import torch
from torch import nn

from core.benchmark import BenchContext, Benchmark, Requirements, Workload

ROWS, COLS = 2048, 8192


class GeluAbsmax(nn.Module):
    """The chain with the scale kept on the GPU (a tensor, never read by the host)."""

    def __init__(self, w: torch.Tensor, b: torch.Tensor):
        super().__init__()
        self.w = nn.Parameter(w, requires_grad=False)
        self.b = nn.Parameter(b, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.gelu(x * self.w + self.b)
        return y / y.abs().amax()


class FusionBench(Benchmark):
    requires = Requirements(cuda=True)

    def setup(self, ctx: BenchContext) -> None:
        gen = self.generator(ctx.seed)
        w = 1.0 + 0.25 * self.randn(COLS, gen=gen)
        b = 0.1 * self.randn(COLS, gen=gen)
        self.chain = GeluAbsmax(w.to(torch.bfloat16), b.to(torch.bfloat16))

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(ROWS, COLS, gen=self.generator(seed), dtype=torch.bfloat16)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.gelu(x.double() * self.chain.w.double() + self.chain.b.double())
        return y / y.abs().amax()

    def workload(self) -> Workload:
        # fewest bytes: read x once and write out once (the absmax needs all of y before any
        # output, so a fused version reads x twice; that is a choice, not the minimum)
        return Workload(bytes=2 * ROWS * COLS * 2, units=ROWS, unit_name="rows")
