"""Shared by the `compute_bound` pair: C = A @ B at 8192 x 8192 x 8192 (1.1 TFLOP per run).

At this size a matmul does over 1300 FLOP per byte of its minimum traffic (fp32), far right
of every ridge point: its time is set by the math units, so the lever is faster math. Both sides
get the same fp32 activations A (per call) and weight B (standard normal); the optimized side
stores B in bf16 (rounded once, in setup()), rounds A to bf16 on every call and runs on the
tensor cores. Its output stays fp32 (cuBLAS writes the fp32 accumulator directly), so the only
precision change is the bf16 rounding of the inputs.

Tolerance, derived. bf16 keeps 8 significant bits: rounding x changes it by a relative
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
"""
from __future__ import annotations

import math

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


BF16_INPUT_TOLERANCE = Tolerance(rtol=5e-3, atol=0.02 * math.sqrt(K))
FLOPS = 2 * M * N * K
