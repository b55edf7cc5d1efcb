"""Inputs for the occupancy pair: softmax over 1M rows of 128 floats (512 MiB in, 512 MiB out)."""
from __future__ import annotations

from core.benchmark import Workload
from core.cuda_pair import CudaPair

ROWS, ROW = 1 << 20, 128


class SoftmaxBench(CudaPair):
    source = "occupancy.cu"

    def make_inputs(self) -> None:
        self.x = self.randn(ROWS, ROW)
        self.y = self.nan_like(self.x)

    def workload(self) -> Workload:
        return Workload(bytes=2 * ROWS * ROW * 4)
