"""Shared by the `triton_matmul` pair: C = A @ B, bf16 4096 x 4096 x 4096, fp32 accumulation.

Three sides: a first Triton kernel (fixed small tiles, row-major program order), the tuned
Triton kernel (autotuned tile shape, grouped program order) and cuBLAS through torch.matmul,
so the report shows how close each Triton kernel gets to the vendor library on this GPU.

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
        gen = torch.Generator(device=ctx.device).manual_seed(ctx.seed)
        self.a = torch.randn(M, K, generator=gen, device=ctx.device).to(torch.bfloat16)
        self.b = torch.randn(K, N, generator=gen, device=ctx.device).to(torch.bfloat16)
        self.c = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device=ctx.device)
        self.prepare()

    def prepare(self) -> None:
        """Per-variant setup: compile (and autotune) the kernel, then re-arm the NaN output."""

    def workload(self) -> Workload:
        return Workload(bytes=2 * (M * K + K * N + M * N), flops=2 * M * N * K, flops_dtype="bf16")
