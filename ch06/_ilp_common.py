"""Inputs for the ilp pair: a polynomial with 131072 random coefficients at 32768 points.

32768 points give one thread each: 1024 warps, under 2 per warp scheduler on an H100, which
is the point (ilp.cu explains). Points lie in (-0.999, 0.999) so every term stays finite.
The coefficients are the pair's parameters (setup(), from ctx.seed); the points are each
call's input.

Tolerance: the optimized kernel sums the same terms in a different order (four interleaved
Horner chains). Both orders are backward stable; an exact CPU emulation (C fmaf, the same
correctly rounded FMA as the GPU) over 8 x 32768 points measured differences of at most
2.4e-4, i.e. at most 5e-7 of Σ|c_k·x^k| (which stays below ~800 here), against values of
size 1-30. rtol 1e-3 with atol 2e-3 keeps ~8x margin and still catches a wrong or missing
coefficient (an O(1) change).
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Tolerance, Workload
from core.cuda_pair import CudaPair

N, K = 1 << 15, 1 << 17


class PolynomialBench(CudaPair):
    source = "ilp.cu"
    tolerance = Tolerance(rtol=1e-3, atol=2e-3)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.coef = self.randn(K, gen=self.generator(ctx.seed))
        self.ys = torch.full((N,), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        gen = self.generator(seed)
        return (torch.rand(N, generator=gen, device=self.device) * 2 - 1) * 0.999

    def reference(self, xs: torch.Tensor) -> torch.Tensor:
        """p(x) = Σ_k c_k·x^k in float64 (both kernels share ilp.cu's staging code).

        Split into blocks of 256 coefficients: p(x) = Σ_m x^(256m) · Σ_j c_(256m+j)·x^j,
        so the inner sums are one float64 matmul instead of 131072 dependent steps."""
        x = xs.double()[:, None]
        c = self.coef.double().view(-1, 256)  # row m: c_(256m) .. c_(256m+255)
        j = torch.arange(256, dtype=torch.float64, device=x.device)
        m = torch.arange(c.shape[0], dtype=torch.float64, device=x.device)
        return ((x**j @ c.T) * x ** (256 * m)).sum(dim=1)

    def workload(self) -> Workload:
        return Workload(bytes=4 * (2 * N + K), flops=2 * N * K, flops_dtype="fp32")
