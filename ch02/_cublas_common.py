"""Shared by the `cublas` pair: C = A @ B for two 8192 × 8192 fp32 matrices, through cuBLAS.

Chapter 2's view of the SM: it has CUDA cores, which run fp32 fused multiply-adds, and tensor
cores, which run whole small matrix products on TF32, bf16, fp16 or fp8 operands and hold most
of the chip's FLOPs. A matmul that keeps every bit of its fp32 inputs cannot use the tensor
cores. The sides run the same `torch.mm` (cuBLAS) and differ only in the precision they allow:

- baseline: `torch.set_float32_matmul_precision("highest")`, torch's default for fp32
  matmuls: fp32 FFMA on the CUDA cores.
- `cublas`: `"high"`: cuBLAS may round each fp32 input to TF32 (10 stored mantissa bits) and
  use the tensor cores, accumulating in fp32. Same tensors, one setting.
- `cublas_bf16`: both matrices converted to bf16 in run(), bf16 tensor cores, fp32
  accumulator written out as the fp32 result.

Both matrices are the call's inputs (make_inputs): a general product of two fp32 operands, as
an attention score (Q·Kᵀ) or a gradient GEMM is, so the bf16 side converts both every call and
pays for it. Chapter 9's `compute_bound` takes the other case, a weight stored in bf16 once.

The precision setting is process-wide and every side of a pair runs in one process, so each
side sets it inside run() and restores the previous value after (`matmul_precision`): no side
depends on, or leaves behind, what another set. Setting it costs microseconds of host time
against milliseconds of GEMM.

Tolerances (what the precision costs; derived in ch09/_compute_bound_common.py). The outputs
have standard deviation sqrt(K) ≈ 90.5. Rounding the inputs adds an error of standard
deviation ~3.0e-4·sqrt(K) ≈ 0.027 with TF32 (0.03% of a typical output) and ~2.4e-3·sqrt(K)
≈ 0.21 with bf16 (0.24%); the largest of 67M such errors lies near 5.7 standard deviations.
atol = 0.007·sqrt(K) (TF32) and 0.02·sqrt(K) (bf16) accept that with room, and stay far below
the O(sqrt(K)) errors of a wrong product. The error comes from the inputs, not from |C|, and
the output is the fp32 accumulator, so rtol stays fp32's 1e-4.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from core.benchmark import Benchmark, Tolerance, Workload

M = N = K = 8192
TF32_TOLERANCE = Tolerance(rtol=1e-4, atol=0.007 * math.sqrt(K))
BF16_TOLERANCE = Tolerance(rtol=1e-4, atol=0.02 * math.sqrt(K))


@contextmanager
def matmul_precision(level: str) -> Iterator[None]:
    """`torch.set_float32_matmul_precision(level)` for the block, the previous level after."""
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(level)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


class CublasBench(Benchmark):
    flops_dtype = "fp32"  # the precision of the side's FLOPs: the ceiling they are judged by

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = self.generator(seed)
        return self.randn(M, K, gen=gen), self.randn(K, N, gen=gen)

    def workload(self) -> Workload:
        # Every side reads fp32 A and B and writes fp32 C (the bf16 side's conversions are
        # extra traffic it chose, not part of the fewest bytes the product needs).
        return Workload(bytes=4 * (M * K + K * N + M * N), flops=2 * M * N * K,
                        flops_dtype=self.flops_dtype)
