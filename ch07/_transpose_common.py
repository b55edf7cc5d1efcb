"""Inputs for the transpose pair: an 8192 x 8192 fp32 matrix (256 MiB in, 256 MiB out)."""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

ROWS, COLS = 8192, 8192


class TransposeBench(CudaPair):
    source = "transpose.cu"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.dst = torch.full((COLS, ROWS), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(ROWS, COLS, gen=self.generator(seed))

    def reference(self, src: torch.Tensor) -> torch.Tensor:
        return src.t().contiguous()  # both kernels live in transpose.cu: check against torch

    def workload(self) -> Workload:
        return Workload(bytes=2 * ROWS * COLS * 4)
