"""Shared by the `elementwise_fusion` pair: an activation epilogue on a 8192 x 8192 fp32 tensor.

    y = gelu(x * w + b) * sigmoid(x) + x        (w, b: per-column vectors of length COLS)

Written in eager PyTorch this is six kernels (mul, add, gelu, sigmoid, mul, add), and every
one reads its inputs from HBM and writes its result back: 14 passes over a 256 MiB tensor.
A fused kernel reads x once and writes y once (w and b are 64 KiB and stay in cache).
All sides compute in fp32 with the same formulas (exact erf GELU, 1 / (1 + exp(-x))
sigmoid); only the exp/erf implementations differ, by a few fp32 ulps.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from core.benchmark import BenchContext, Benchmark, Workload

ROWS, COLS = 8192, 8192  # 64M elements, 256 MiB: ~5x a Hopper L2


def epilogue(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The eager chain (the baseline, and what torch.compile fuses)."""
    return F.gelu(x * w + b) * torch.sigmoid(x) + x


class ElementwiseBench(Benchmark):
    def setup(self, ctx: BenchContext) -> None:
        gen = self.generator(ctx.seed)  # w and b are the layer's parameters
        self.w = 1.0 + 0.1 * self.randn(COLS, gen=gen)
        self.b = 0.1 * self.randn(COLS, gen=gen)
        self.prepare()

    def prepare(self) -> None:
        """Per-variant setup (compilation and warm-up); not timed."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(ROWS, COLS, gen=self.generator(seed))  # x

    def workload(self) -> Workload:
        # The fewest bytes the function needs (read x, write y), for every side: the
        # baseline's extra passes over intermediates are the cost being measured.
        return Workload(bytes=2 * ROWS * COLS * 4)
