"""Inputs for the add_vectorized pair: c = a + b over 64M floats (3 x 256 MiB, ~15x a Hopper L2)."""
from __future__ import annotations

from core.benchmark import Workload
from core.cuda_pair import CudaPair

N = 1 << 26


class AddBench(CudaPair):
    source = "add.cu"

    def make_inputs(self) -> None:
        self.a = self.randn(N)
        self.b = self.randn(N)
        self.c = self.nan_like(self.a)

    def workload(self) -> Workload:
        return Workload(bytes=3 * N * 4)  # read a and b, write c
