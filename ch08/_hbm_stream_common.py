"""Inputs for the hbm_stream pair: y = a*x + z over 64M floats per array (3 x 256 MiB).

Every run streams 768 MiB through HBM, ~15x a Hopper L2, so nothing is served from cache.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

N, A, CTAS_PER_SM = 1 << 26, 2.5, 4  # 4 resident CTAs of 256 threads per SM (triad.cu)


class TriadBench(CudaPair):
    source = "triad.cu"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.y = torch.full((N,), float("nan"), device=ctx.device)  # output workspace
        self.ctas = CTAS_PER_SM * self.sm_count()

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = self.generator(seed)
        return self.randn(N, gen=gen), self.randn(N, gen=gen)  # x, z

    def reference(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, z = inputs
        return A * x.double() + z.double()

    def workload(self) -> Workload:
        return Workload(bytes=3 * N * 4)  # x and z read once, y written once
