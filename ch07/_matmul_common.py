"""Inputs for the matmul_tiled pair: fp32 4096 x 4096 x 4096 (137 GFLOP per run)."""
from __future__ import annotations

import torch

from core.benchmark import Tolerance, Workload
from core.cuda_pair import CudaPair

M = N = K = 4096


class MatmulBench(CudaPair):
    source = "matmul.cu"
    # Same k order in both kernels, but the compiler may contract differently: fp32 rounding.
    tolerance = Tolerance(rtol=1e-4, atol=1e-4)

    def make_inputs(self) -> None:
        self.a = self.randn(M, K)
        self.b = self.randn(K, N)
        self.c = torch.full((M, N), float("nan"), device=self.device)

    def workload(self) -> Workload:
        return Workload(bytes=4 * (M * K + K * N + M * N), flops=2 * M * N * K, flops_dtype="fp32")
