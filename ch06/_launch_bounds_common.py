"""Inputs for the launch_bounds pair: Y = W·X with X 64 x 1M, W 112 x 64 (fp32).

X is 256 MiB and Y 448 MiB. One thread per column keeps 112 accumulators in registers,
which is what makes the kernel register-heavy (see launch_bounds.cu for the ptxas counts).
"""
from __future__ import annotations

import torch

from core.benchmark import Workload
from core.cuda_pair import CudaPair

K, OUT, N = 64, 112, 1 << 20


class ProjectBench(CudaPair):
    source = "launch_bounds.cu"

    def make_inputs(self) -> None:
        self.x = self.randn(K, N)               # feature-major: row k = feature k of every column
        self.wt = self.randn(K, OUT) * K**-0.5  # W stored transposed (k-major)
        self.y = torch.full((OUT, N), float("nan"), device=self.device)

    def workload(self) -> Workload:
        return Workload(bytes=4 * (K * N + OUT * N + K * OUT), flops=2 * OUT * K * N,
                        flops_dtype="fp32")
