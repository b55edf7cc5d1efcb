"""Inputs for the loop_unrolling pair: a 128-term power series at 32M points (polynomial.cu).

Both kernels run a persistent grid of 2 CTAs x 256 threads per SM: 16 warps per SM, the
residency of a kernel that needs 128 registers a thread (or large shared-memory tiles). With
64 warps per SM the scheduler would hide the Horner chain behind other warps by itself (that
is the occupancy lever, see occupancy_tuning); unrolling into independent chains is what is
left when the warps are not there.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

N, TERMS, CTAS_PER_SM = 1 << 25, 128, 2  # TERMS is fixed in polynomial.cu


class PolyBench(CudaPair):
    source = "polynomial.cu"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.y = torch.full((N,), float("nan"), device=ctx.device)  # output workspace
        self.ctas = CTAS_PER_SM * self.sm_count()

    def make_inputs(self, seed: int) -> torch.Tensor:
        # x in [-1, 1): the series converges and every term matters to the last few ulps.
        return 2 * torch.rand(N, generator=self.generator(seed), device=self.device) - 1

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        """p(x) = sum_k x^k / (k+1) by Horner's rule in float64, with exact coefficients."""
        x = x.double()
        acc = torch.full_like(x, 1 / TERMS)
        for k in range(TERMS - 2, -1, -1):
            acc.mul_(x).add_(1 / (k + 1))
        return acc

    def workload(self) -> Workload:
        return Workload(bytes=2 * N * 4, flops=2 * (TERMS - 1) * N, flops_dtype="fp32")
