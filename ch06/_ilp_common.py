"""Inputs for the ilp pair: a polynomial with 131072 random coefficients at 32768 points.

32768 points give one thread each: 1024 warps, under 2 per warp scheduler on an H100, which
is the point (ilp.cu explains). Points lie in (-0.999, 0.999) so every term stays finite.

Tolerance: the optimized kernel sums the same terms in a different order (four interleaved
Horner chains). Both orders are backward stable; an exact CPU emulation (C fmaf, the same
correctly rounded FMA as the GPU) over 8 x 32768 points measured differences of at most
2.4e-4, i.e. at most 5e-7 of Σ|c_k·x^k| (which stays below ~800 here), against values of
size 1-30. rtol 1e-3 with atol 2e-3 keeps ~8x margin and still catches a wrong or missing
coefficient (an O(1) change).
"""
from __future__ import annotations

import torch

from core.benchmark import Tolerance, Workload
from core.cuda_pair import CudaPair

N, K = 1 << 15, 1 << 17


class PolynomialBench(CudaPair):
    source = "ilp.cu"
    tolerance = Tolerance(rtol=1e-3, atol=2e-3)

    def make_inputs(self) -> None:
        self.coef = self.randn(K)
        self.xs = (torch.rand(N, generator=self.gen, device=self.device) * 2 - 1) * 0.999
        self.ys = self.nan_like(self.xs)

    def workload(self) -> Workload:
        return Workload(bytes=4 * (2 * N + K), flops=2 * N * K, flops_dtype="fp32")
