"""Shared by the `fp8_gemm` pair: C = A @ B at 8192 x 8192 x 8192, bf16 output.

Both sides get the same bf16 activations A (per call) and weight B (standard normal). The
baseline multiplies them as they are; the fp8 sides quantize to float8 e4m3 with one scale
per tensor (amax / 448, e4m3's largest finite value) and let `torch._scaled_mm` multiply the
fp8 values on Hopper's fp8 tensor cores and apply the two scales. The weight B is quantized
once, in setup(), as a deployed model stores it; the activations A are quantized in run(), on
every call, as an inference server quantizes each new batch (an amax reduction over A, then
a scale-and-cast, fused by torch.compile into two kernels). That per-call work is part of what fp8 costs: the
first version of this pair quantized A in setup() too and left it out of the timing; the
number measured now is the honest one.

Tolerance, derived. e4m3 keeps 4 significant bits (3 stored): rounding changes a value by
up to 2^-4 = 6.25% relative, with standard deviation ~2.7% for normally distributed values
(2^-3 / sqrt(12) times the spread of the significand; measured 2.67%; the per-tensor scale
puts nearly every value in e4m3's normal range). A product picks up delta_a + delta_b and
the K errors of a dot product are independent, so they add in quadrature, not in sum:
sigma_err = sqrt(K) * sqrt(2) * 0.027 ≈ 0.038 * sqrt(K) for unit-variance inputs (measured
0.0375 * sqrt(K)), i.e. ~3.8% of the typical output (whose standard deviation is sqrt(K)).
The dot product does not shrink the *relative* error (signal and error both grow like
sqrt(K)); it only keeps it from growing. The largest of 67M outputs' errors lies near
5.7 sigma (≈ 0.21 * sqrt(K)). atol = 0.3 * sqrt(K) (≈ 27 here, 8 sigma) accepts that,
with room for the reduced-precision accumulation of the fast-accum variant; a wrong
result (wrong layout or scale) errs by O(sqrt(K)) nearly everywhere and still fails.
rtol = 1e-2 covers both sides' bf16 output rounding (at most 2^-9 of |c| each).
"""
from __future__ import annotations

import math

import torch

from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

M = N = K = 8192
E4M3_MAX = 448.0  # torch.finfo(torch.float8_e4m3fn).max

FP8_TOLERANCE = Tolerance(rtol=1e-2, atol=0.3 * math.sqrt(K))


class Fp8GemmBench(Benchmark):
    def setup(self, ctx: BenchContext) -> None:
        self.b = self.randn(K, N, gen=self.generator(ctx.seed), dtype=torch.bfloat16)  # weight
        self.prepare()

    def prepare(self) -> None:
        """Per-variant setup (quantization of the weight); not timed."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(M, K, gen=self.generator(seed), dtype=torch.bfloat16)  # activations A

    def workload(self) -> Workload:
        return Workload(bytes=2 * (M * K + K * N + M * N), flops=2 * M * N * K, flops_dtype="bf16")


def quantize_e4m3(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-tensor fp8 quantization: (x / scale) in e4m3 and the fp32 scale that undoes it."""
    scale = (x.abs().amax().float() / E4M3_MAX).clamp_min(1e-12)
    q = (x.float() / scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return q, scale


class ScaledMmBench(Fp8GemmBench):
    """torch._scaled_mm on per-tensor-scaled e4m3 copies of A (per call) and B (once)."""
    precision = "e4m3 operands, per-tensor scales"  # declared: its workload() counts the narrower bytes

    fast_accum = False
    tolerance = FP8_TOLERANCE

    def prepare(self) -> None:
        # _scaled_mm wants its second operand column-major: quantize B^T as a row-major
        # (N, K) tensor and pass its transpose, a (K, N) view with strides (1, K).
        self.bt8, self.scale_b = quantize_e4m3(self.b.t().contiguous())
        del self.b  # this side reads only the fp8 copy
        # The activations' quantizer runs every call: compiled, it is two fused kernels (an
        # amax reduction, then scale-and-cast: ~5 bytes per element of A) instead of six eager
        # ones (~33 bytes per element) — what a serving stack's fused quantizer does.
        self.quantize = torch.compile(quantize_e4m3) if self.ctx.is_cuda else quantize_e4m3
        self.quantize(self.make_inputs(self.ctx.seed))  # compile now, not in the first timed call

    def run(self, a: torch.Tensor) -> torch.Tensor:
        a8, scale_a = self.quantize(a)  # (M, K) row-major, this call's activations
        return torch._scaled_mm(a8, self.bt8.t(), scale_a=scale_a, scale_b=self.scale_b,
                                out_dtype=torch.bfloat16, use_fast_accum=self.fast_accum)

    def workload(self) -> Workload:
        # bf16 A (quantized in run()), 1-byte B, bf16 output; FLOPs judged against the fp8
        # tensor-core ceiling.
        return Workload(bytes=2 * M * K + K * N + 2 * M * N, flops=2 * M * N * K,
                        flops_dtype="fp8")
