"""Shared by the `compute_bound` pair: C = A @ B at 8192 x 8192 x 8192 (1.1 TFLOP per run).

At this size a matmul does over 1300 FLOP per byte of its minimum traffic (fp32), far right
of every ridge point: its time is set by the math units, so the lever is faster math. All sides
get the same fp32 activations A (per call) and weight B (standard normal). The baseline runs
true fp32 (TF32 off). The `compute_bound_tf32` variant keeps fp32 inputs and output and lets
cuBLAS use the TF32 tensor cores (the one-flag first fix). The `compute_bound` side stores B
in bf16 (rounded once, in setup()), rounds A to bf16 on every call and runs on the bf16
tensor cores. Its output stays fp32 (cuBLAS writes the fp32 accumulator directly), so the only
precision change is the bf16 rounding of the inputs.

Tolerance (bf16 side), derived. bf16 keeps 8 significant bits: rounding x changes it by a relative
delta with standard deviation ~1.7e-3 for normally distributed values (2^-7 / sqrt(12)
times the spread of the significand; measured 1.66e-3). A product a*b picks up
delta_a + delta_b, and the K errors of a dot product are independent, so they add in
quadrature: sigma_err = sqrt(K) * sigma_a * sigma_b * sqrt(2) * 1.7e-3 ≈ 0.0024 * sqrt(K)
(= 0.21 at K = 8192; measured 0.00234 * sqrt(K) on CPU). The outputs themselves have
standard deviation sqrt(K) (≈ 90.5), so the error is ~0.24% of the typical output, and the
largest of the 67M errors lies near 5.7 sigma (≈ 1.2). atol = 0.02 * sqrt(K) (≈ 1.8, 8.5
sigma) accepts that and still rejects a wrong result, whose errors are O(sqrt(K)) almost
everywhere. rtol = 5e-3 covers the bf16 rounding of the output (at most 2^-9 of |c|) on
torch versions without fp32-output bf16 GEMMs, where the side converts with .float().

The TF32 variant (optimized_compute_bound_tf32.py), derived the same way. TF32 keeps 11
significant bits (10 stored): rounding to nearest changes x by at most 2^-11 relative, with
standard deviation ~2.1e-4 for normal data (2^-10 / sqrt(12) times the same significand
spread; simulated on CPU: 2.07e-4, 8x smaller than bf16's). In quadrature over K:
sigma_err ≈ sqrt(K) * sqrt(2) * 2.1e-4 ≈ 3.0e-4 * sqrt(K) (simulated 2.94e-4 * sqrt(K),
= 0.027 at K = 8192, 0.03% of the typical output; measured on an H100 with torch 2.11's
cuBLAS: 2.94e-4 * sqrt(K), so it rounds to nearest, and the largest difference from the fp32
baseline over one 8192 x 8192 output was 0.157, 5.9 sigma). If a GPU or library truncated the 13 low bits instead, both
factors would shrink toward zero and the errors of a and b add coherently: simulated
7.7e-4 * sqrt(K). atol = 0.007 * sqrt(K) (≈ 0.63) is 9 sigma even for truncation (the
largest of 67M errors lies near 5.7 sigma), 24 sigma for rounding, and still
two orders of magnitude below the O(sqrt(K)) errors of a wrong result. The output is fp32
straight from the accumulator (no output rounding) and the error does not scale with |c|, so
rtol is the fp32 default, 1e-4 (fp32 sums in another order, ~1e-7 relative here).
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from core.benchmark import BenchContext, Benchmark, Tolerance

M = N = K = 8192


class ComputeBoundBench(Benchmark):
    def setup(self, ctx: BenchContext) -> None:
        self.b = self.randn(K, N, gen=self.generator(ctx.seed))  # the weight
        self.prepare()

    def prepare(self) -> None:
        """Per-variant setup (weight conversion); not timed."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(M, K, gen=self.generator(seed))  # the activations A


@contextmanager
def cublas_tf32(allowed: bool) -> Iterator[None]:
    """`torch.backends.cuda.matmul.allow_tf32 = allowed` for the block, the previous value after.

    The flag is process-wide and every side of the pair runs in one process, so each side sets
    what it needs inside run() and restores it: no side depends on, or leaves behind, global
    state. torch >= 2.9 also has `torch.backends.cuda.matmul.fp32_precision` ("ieee" / "tf32"),
    but no context manager for it, and reading the legacy flag after the new one was set to a
    different value raises (torch refuses the mix); the legacy flag is what core.hardware uses
    for its ceilings, so the pair uses it too. Setting it costs microseconds of host time
    against milliseconds of GEMM.
    """
    flags = torch.backends.cuda.matmul
    previous = flags.allow_tf32
    flags.allow_tf32 = allowed
    try:
        yield
    finally:
        flags.allow_tf32 = previous


BF16_INPUT_TOLERANCE = Tolerance(rtol=5e-3, atol=0.02 * math.sqrt(K))
TF32_INPUT_TOLERANCE = Tolerance(rtol=1e-4, atol=0.007 * math.sqrt(K))
FLOPS = 2 * M * N * K
