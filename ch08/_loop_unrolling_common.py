"""Inputs for the loop_unrolling pair: a 128-term power series at 32M points (polynomial.cu).

Both kernels launch the grid an engineer writes first for a grid-stride loop: enough 256-thread
CTAs to give every thread one loop iteration (ceil(n / 256) for one element a thread,
ceil(n / 4 / 256) for one float4), so the GPU runs them at the residency their registers allow
(64 warps per SM for both). The first version pinned both to 2 CTAs per SM (16 warps, the
residency of a 128-register kernel), where unrolling measured 1.88x; at the natural residency
other warps hide part of the Horner chain and unrolling buys less (README).
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

N, TERMS, THREADS = 1 << 25, 128, 256  # TERMS and THREADS are fixed in polynomial.cu


class PolyBench(CudaPair):
    source = "polynomial.cu"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.y = torch.full((N,), float("nan"), device=ctx.device)  # output workspace

    @staticmethod
    def grid(elements_per_thread: int) -> int:
        """One loop iteration per thread: the natural grid of a grid-stride kernel."""
        return -(-N // (elements_per_thread * THREADS))

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
