"""Inputs for the add pair (teaching): c = a + b over 1M floats (12 MiB in all).

Small on purpose: the baseline runs the whole loop on one GPU thread, so at this size it
already takes tens of milliseconds; the one-thread-per-element kernel takes microseconds.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

N = 1 << 20


class AddBench(CudaPair):
    source = "add.cu"
    # The per-thread kernel takes a few µs, less than the host's launch through ctypes
    # (~26 µs per eager call measured on an H200): eager samples would time the host.
    # Both sides are timed by CUDA-graph replay instead (core.timing.graph_replay).
    timing_mode = "graph"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        # NaN-filled: an element the kernel never writes fails verification
        self.c = torch.full((N,), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = self.generator(seed)
        return self.randn(N, gen=gen), self.randn(N, gen=gen)

    def reference(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        a, b = inputs  # both sides run add.cu: check the baseline against float64 torch
        return a.double() + b.double()

    def workload(self) -> Workload:
        return Workload(bytes=3 * N * 4)  # read a and b, write c
