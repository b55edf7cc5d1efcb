"""Shared by the `triton_matmul` pair: C = A @ B, bf16 4096 x 4096 x 4096, fp32 accumulation.

Three sides: a first Triton kernel (fixed small tiles, row-major program order), the tuned
Triton kernel (autotuned tile shape, grouped program order) and cuBLAS through torch.matmul,
so the report shows how close each Triton kernel gets to the vendor library on this GPU.
A is the per-call input, B a weight drawn in setup(); `reference()` is a float64 matmul, a
check that the Triton kernels' shared tile loop cannot pass by agreeing with itself.

Tolerance: every side multiplies the same bf16 inputs exactly (bf16 x bf16 products fit in
fp32) and sums in fp32, in different orders; the fp32 sums agree to ~1e-6 relative, then
each side rounds to bf16 (8 significant bits). Where the sums straddle a rounding boundary
two sides differ by one bf16 ulp: at most 2^-7 = 0.8% of the value, inside rtol = 1e-2.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

M = N = K = 4096


class MatmulBench(Benchmark):
    requires = Requirements(modules=("triton",), min_compute_capability=(8, 0))  # bf16 MMA
    tolerance = Tolerance(rtol=1e-2, atol=1e-2)

    def setup(self, ctx: BenchContext) -> None:
        self.b = self.randn(K, N, gen=self.generator(ctx.seed), dtype=torch.bfloat16)  # weight
        self.c = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device=ctx.device)
        self.prepare()

    def prepare(self) -> None:
        """Per-variant setup: compile (and autotune) the kernel, then re-arm the NaN output."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(M, K, gen=self.generator(seed), dtype=torch.bfloat16)  # A

    def reference(self, a: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a.double(), self.b.double())

    def workload(self) -> Workload:
        return Workload(bytes=2 * (M * K + K * N + M * N), flops=2 * M * N * K, flops_dtype="bf16")
