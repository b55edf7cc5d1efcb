"""Inputs for the matmul_tiled pair: fp32 4096 x 4096 x 4096 (137 GFLOP per run)."""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Tolerance, Workload
from core.cuda_pair import CudaPair

M = N = K = 4096


class MatmulBench(CudaPair):
    source = "matmul.cu"
    # Same k order in both kernels, but the compiler may contract differently: fp32 rounding.
    tolerance = Tolerance(rtol=1e-4, atol=1e-4)
    # fp32 sums of 4096 products against float64 torch: off by ~5e-5, at most ~2e-4 beyond
    # rtol 1e-4 in a CPU emulation (1M outputs); the tolerance above is for the sides.
    reference_tolerance = Tolerance(rtol=1e-4, atol=1e-3)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.c = torch.full((M, N), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = self.generator(seed)
        return self.randn(M, K, gen=gen), self.randn(K, N, gen=gen)

    def reference(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        a, b = inputs  # both kernels live in matmul.cu: check them against torch
        return a.double() @ b.double()

    def workload(self) -> Workload:
        return Workload(bytes=4 * (M * K + K * N + M * N), flops=2 * M * N * K, flops_dtype="fp32")
