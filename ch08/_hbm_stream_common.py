"""Inputs for the hbm_stream pair: y = a*x + z over 64M floats per array (3 x 256 MiB).

Every run streams 768 MiB through HBM, ~15x a Hopper L2, so nothing is served from cache.
"""
from __future__ import annotations

import torch

from core.benchmark import Workload
from core.cuda_pair import CudaPair

N, A, CTAS_PER_SM = 1 << 26, 2.5, 4  # 4 resident CTAs of 256 threads per SM (triad.cu)


class TriadBench(CudaPair):
    source = "triad.cu"

    def make_inputs(self) -> None:
        self.x = self.randn(N)
        self.z = self.randn(N)
        self.y = torch.full_like(self.x, float("nan"))
        self.ctas = CTAS_PER_SM * self.sm_count()

    def workload(self) -> Workload:
        return Workload(bytes=3 * N * 4)  # x and z read once, y written once
