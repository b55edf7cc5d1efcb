"""Shared by the `fused_l2norm` pair: L2-normalize each row of a 16384 x 4096 fp32 matrix.

256 MiB in, 256 MiB out (~5x a Hopper L2): every pass over the matrix goes to HBM. The
baseline is `F.normalize(x, dim=1)`, what one writes first; the optimized side is the fused
kernel of fused_l2norm.cu (so only it needs nvcc). `reference()` is F.normalize in float64,
which the harness checks the baseline against. The two sides sum each row in different
orders and the kernel multiplies by 1/norm where torch divides by the norm: a few fp32 ulps
apart, inside the default fp32 tolerance (rtol 1e-4).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from core.benchmark import Benchmark, Workload

ROWS, COLS = 16384, 4096


class L2NormBench(Benchmark):
    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(ROWS, COLS, gen=self.generator(seed))  # x

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x.double(), dim=1)

    def workload(self) -> Workload:
        # The fewest bytes the function needs (read x once, write y once), for both sides:
        # the baseline's extra pass is the cost being measured.
        return Workload(bytes=2 * ROWS * COLS * 4)
