"""Shared by the `triton_persistent` pair: C = A @ B, bf16 8192 x 8192 x 8192, fp32 accumulation.

A is the per-call input, B a weight drawn in setup(), C a preallocated output (NaN until a
kernel writes it). Both sides are autotuned over the same six Hopper tile configurations
(_triton_persistent_kernels.TILES) on the first call, in setup(); they differ only in how
programs map to tiles and how tiles reach shared memory. The rate column is TFLOP/s against
the bf16 matmul ceiling `hw peak` measured with cuBLAS, so "% of ceiling" is "% of cuBLAS".

`reference()` is a float64 matmul, so the two Triton kernels cannot agree their way past a
shared mistake. Tolerance: both multiply the same bf16 values exactly and sum in fp32 in
different orders, then round to bf16; a sum straddling a rounding boundary differs by one
bf16 ulp, 2^-7 = 0.8% relative, inside rtol = 1e-2.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

M = N = K = 8192


class PersistentBench(Benchmark):
    requires = Requirements(modules=("triton",), min_compute_capability=(8, 0))  # bf16 MMA
    tolerance = Tolerance(rtol=1e-2, atol=1e-2)

    def setup(self, ctx: BenchContext) -> None:
        self.b = self.randn(K, N, gen=self.generator(ctx.seed), dtype=torch.bfloat16)  # weight
        self.c = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device=ctx.device)
        self.prepare()
        self.c.fill_(float("nan"))  # re-arm: what the warm-up wrote must not count

    def prepare(self) -> None:
        """Per-variant setup: autotune and compile the kernel on throwaway data."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(M, K, gen=self.generator(seed), dtype=torch.bfloat16)  # A

    def reference(self, a: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a.double(), self.b.double())

    def workload(self) -> Workload:
        return Workload(bytes=2 * (M * K + K * N + M * N), flops=2 * M * N * K,
                        flops_dtype="bf16")
