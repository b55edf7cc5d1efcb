"""Inputs for the add pair (teaching): c = a + b over 1M floats (12 MiB in all).

Small on purpose: the baseline runs the whole loop on one GPU thread, so at this size it
already takes tens of milliseconds; the one-thread-per-element kernel takes microseconds.
"""
from __future__ import annotations

from core.benchmark import Workload
from core.cuda_pair import CudaPair

N = 1 << 20


class AddBench(CudaPair):
    source = "add.cu"

    def make_inputs(self) -> None:
        self.a = self.randn(N)
        self.b = self.randn(N)
        self.c = self.nan_like(self.a)  # unwritten elements fail verification

    def workload(self) -> Workload:
        return Workload(bytes=3 * N * 4)  # read a and b, write c
