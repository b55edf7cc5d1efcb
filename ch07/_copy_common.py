"""Inputs for the copy pairs: a 8192 x 8192 fp32 matrix (256 MiB, ~5x a Hopper L2)."""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

ROWS, COLS = 8192, 8192


class CopyBench(CudaPair):
    source = "copy.cu"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.dst = torch.full((ROWS, COLS), float("nan"), device=ctx.device)  # output workspace

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(ROWS, COLS, gen=self.generator(seed))

    def reference(self, src: torch.Tensor) -> torch.Tensor:
        return src.clone()  # both sides' kernels live in copy.cu: check them against torch

    def workload(self) -> Workload:
        return Workload(bytes=2 * ROWS * COLS * 4)  # read once, write once
