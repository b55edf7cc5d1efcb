"""Inputs for the warp_divergence pair: 64M floats in (-1, 1) (256 MiB in, 256 MiB out).

Each element gets a 64-term power series (63 FMAs); even and odd elements use different
series, which is what makes the naive kernel diverge.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

N, FMAS_PER_ELEMENT = 1 << 26, 63
TERMS = FMAS_PER_ELEMENT + 1


class ActivationBench(CudaPair):
    source = "warp_divergence.cu"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.y = torch.full((N,), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return torch.rand(N, generator=self.generator(seed), device=self.device) * 2 - 1

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        """The two series of warp_divergence.cu (both sides share them), Horner in float64."""
        x = x.double()
        even, odd = x[0::2], x[1::2]
        y_even, y_odd = torch.zeros_like(even), torch.zeros_like(odd)
        for k in reversed(range(TERMS)):
            y_even.mul_(even).add_(1.0 / (k + 1))  # Σ x^k / (k+1)
            y_odd.mul_(odd).add_((-1.0) ** k / (2 * k + 1))  # Σ (-1)^k x^k / (2k+1)
        y = torch.empty_like(x)
        y[0::2], y[1::2] = y_even, y_odd
        return y

    def workload(self) -> Workload:
        return Workload(bytes=2 * N * 4, flops=2 * FMAS_PER_ELEMENT * N, flops_dtype="fp32")
