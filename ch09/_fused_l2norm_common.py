"""Shared by the `fused_l2norm` pair: L2-normalize each row of a 16384 x 4096 fp32 matrix.

256 MiB in, 256 MiB out (~5x a Hopper L2): every pass over the matrix goes to HBM. Both
kernels sum each row in the same order, so the outputs agree bit for bit (see
fused_l2norm.cu); `reference()` is torch.nn.functional.normalize in float64, which the
harness checks the baseline against and the pair's own comparison (two kernels of one
file) cannot replace.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

ROWS, COLS = 16384, 4096


class L2NormBench(CudaPair):
    source = "fused_l2norm.cu"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.y = torch.full((ROWS, COLS), float("nan"), device=ctx.device)  # output workspace

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(ROWS, COLS, gen=self.generator(seed))  # x

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x.double(), dim=1)

    def workload(self) -> Workload:
        # The fewest bytes the function needs (read x once, write y once), for both sides:
        # the unfused side's extra passes are the cost being measured.
        return Workload(bytes=2 * ROWS * COLS * 4)
