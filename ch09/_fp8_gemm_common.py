"""Shared by the `fp8_gemm` pair: C = A @ B at 8192 x 8192 x 8192, bf16 output.

Both sides start from the same bf16 A and B (standard normal). The baseline multiplies
them as they are; the fp8 sides quantize them once, in setup(), to float8 e4m3 with one
scale per tensor (amax / 448, e4m3's largest finite value), and let `torch._scaled_mm`
multiply the fp8 values on Hopper's fp8 tensor cores and apply the two scales.

Quantizing the activations (A) in setup() is a simplification: an inference server
quantizes each new batch: an amax pass and a cast, ~5 bytes per element of A (~0.1 ms at
3 TB/s, small next to the GEMM); weights (B) are quantized once, as here.

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
        gen = torch.Generator(device=ctx.device).manual_seed(ctx.seed)
        self.a = torch.randn(M, K, generator=gen, device=ctx.device).to(torch.bfloat16)
        self.b = torch.randn(K, N, generator=gen, device=ctx.device).to(torch.bfloat16)
        self.prepare()

    def prepare(self) -> None:
        """Per-variant setup (quantization); not timed."""

    def workload(self) -> Workload:
        return Workload(bytes=2 * (M * K + K * N + M * N), flops=2 * M * N * K, flops_dtype="bf16")


def quantize_e4m3(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-tensor fp8 quantization: (x / scale) in e4m3 and the fp32 scale that undoes it."""
    scale = (x.abs().amax().float() / E4M3_MAX).clamp_min(1e-12)
    q = (x.float() / scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return q, scale


class ScaledMmBench(Fp8GemmBench):
    """torch._scaled_mm on per-tensor-scaled e4m3 copies of A and B."""

    fast_accum = False
    tolerance = FP8_TOLERANCE

    def prepare(self) -> None:
        self.a8, self.scale_a = quantize_e4m3(self.a)  # (M, K) row-major
        # _scaled_mm wants its second operand column-major: quantize B^T as a row-major
        # (N, K) tensor and pass its transpose, a (K, N) view with strides (1, K).
        self.bt8, self.scale_b = quantize_e4m3(self.b.t().contiguous())
        del self.a, self.b  # this side reads only the fp8 copies

    def run(self) -> torch.Tensor:
        return torch._scaled_mm(self.a8, self.bt8.t(), scale_a=self.scale_a, scale_b=self.scale_b,
                                out_dtype=torch.bfloat16, use_fast_accum=self.fast_accum)

    def workload(self) -> Workload:
        # 1-byte operands, bf16 output; FLOPs judged against the fp8 tensor-core ceiling.
        return Workload(bytes=M * K + K * N + 2 * M * N, flops=2 * M * N * K, flops_dtype="fp8")
