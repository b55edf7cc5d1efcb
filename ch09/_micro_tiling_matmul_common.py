"""Shared by the `micro_tiling_matmul` pair: fp32 4096 x 4096 x 4096 (137 GFLOP per run).

A is the per-call input, B a weight drawn in setup(). Both kernels (micro_tiling_matmul.cu)
accumulate every output in one fp32 register with FMAs in k order 0..K-1, so they agree bit
for bit; the tolerance below is the chapter 7 fp32 matmul tolerance, kept for a compiler that
contracted differently. `reference()` is a float64 torch.matmul, which the harness checks the
baseline against and the pair's own comparison (two kernels of one file) cannot replace, with
its own tolerance: sequential fp32 summation of 4096 products of size ~1 drifts ~5e-5 from
the exact sum (up to ~1e-3 at the tails), while an indexing bug errs by ~sqrt(K) = 64.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Tolerance, Workload
from core.cuda_pair import CudaPair

M = N = K = 4096


class MicroTilingBench(CudaPair):
    source = "micro_tiling_matmul.cu"
    tolerance = Tolerance(rtol=1e-4, atol=1e-4)
    reference_tolerance = Tolerance(rtol=1e-4, atol=1e-2)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.b = self.randn(K, N, gen=self.generator(ctx.seed))  # the weight
        self.c = torch.full((M, N), float("nan"), device=ctx.device)  # output workspace

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(M, K, gen=self.generator(seed))  # A

    def reference(self, a: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a.double(), self.b.double())

    def workload(self) -> Workload:
        return Workload(bytes=4 * (M * K + K * N + M * N), flops=2 * M * N * K, flops_dtype="fp32")
