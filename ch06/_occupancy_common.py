"""Inputs for the occupancy pair: softmax over 1M rows of 128 floats (512 MiB in, 512 MiB out)."""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

ROWS, ROW = 1 << 20, 128


class SoftmaxBench(CudaPair):
    source = "occupancy.cu"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.y = torch.full((ROWS, ROW), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(ROWS, ROW, gen=self.generator(seed))

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        # Both sides launch the same kernel: check it against float64 torch.
        return torch.softmax(x.double(), dim=-1)

    def workload(self) -> Workload:
        return Workload(bytes=2 * ROWS * ROW * 4)
