"""Shared by the `fp8_linear` pair: one linear layer of an LLM on a prefill batch, y = x Wᵀ.

x [8192 tokens, 4096] bf16 (per call), W [14336, 4096] bf16 (the weight, drawn from the
weight seed): the shape of a Llama-3-8B MLP up-projection on a prefill batch, ~0.96 TFLOP
per call, compute-bound on Hopper's tensor cores.

The fp8 side uses row-wise scales, the recipe serving stacks use for fp8 inference (vLLM's
"dynamic per-token" activations with per-channel weights; torchao's float8 rowwise): one fp32
scale per token of x, absmax(row) / 448, computed on every call inside run(), and one per
output channel of W, computed once in setup() when the weight is quantized (a deployed
model stores its fp8 weights). A per-token scale keeps a token with small activations from
being crushed by another token's outlier, which a single per-tensor scale (ch09 fp8_gemm)
cannot.

Tolerance, derived (ch09/_fp8_gemm_common.py has the long form). Rounding to e4m3 errs by
~2.7% (std) of a value, relative; a product of two rounded values by ~3.8%, and the K terms
of a dot product add in quadrature, so an output's error is ~3.8% of the output's own
spread. Here x ~ N(0, 1) and W ~ N(0, 1/K), so outputs are ~N(0, 1) and the error std is
~0.038; measured on the CPU (torch._scaled_mm's CPU kernel, 256 x 512 x 1024, two seeds):
error std 0.0375, largest 0.17-0.18 (4.7 sigma of 0.13M outputs). The GPU shape's 117M outputs put
the largest near 6 sigma, ~0.23. atol 0.3 (8 sigma), rtol 1e-2 (both sides' bf16 output
rounding, ≤ 2^-9 of |y| each). A wrong scale (a row's scale off by 2x moves that row by its
own size) or a wrong layout errs by O(1) almost everywhere and fails.
"""
from __future__ import annotations

import torch

from ch09._fp8_gemm_common import E4M3_MAX
from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

CUDA_SHAPE = dict(tokens=8192, d_in=4096, d_out=14336)
CPU_SHAPE = dict(tokens=64, d_in=128, d_out=96)
FP8_ROWWISE_TOLERANCE = Tolerance(rtol=1e-2, atol=0.3)


def quantize_rowwise(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x [R, C] -> (e4m3 [R, C], fp32 scale [R, 1]) with x ≈ q · scale, scale = absmax(row) / 448."""
    scale = (x.abs().amax(dim=1, keepdim=True).float() / E4M3_MAX).clamp_min(1e-12)
    q = (x.float() / scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return q, scale


class LinearBench(Benchmark):
    supports_cpu = True

    @property
    def shape(self) -> dict[str, int]:
        return CUDA_SHAPE if self.ctx.is_cuda else CPU_SHAPE

    def setup(self, ctx: BenchContext) -> None:
        s = self.shape
        w = self.randn(s["d_out"], s["d_in"], gen=self.generator(ctx.seed)) / s["d_in"] ** 0.5
        self.weight = w.to(torch.bfloat16)
        self.prepare()

    def prepare(self) -> None:
        """Per-side weight preparation (quantization); not timed."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        s = self.shape
        return self.randn(s["tokens"], s["d_in"], gen=self.generator(seed), dtype=torch.bfloat16)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        return x.double() @ self.weight.double().t()

    def workload(self) -> Workload:
        s = self.shape
        t, k, n = s["tokens"], s["d_in"], s["d_out"]
        return Workload(bytes=2 * (t * k + n * k + t * n), flops=2 * t * k * n, flops_dtype="bf16",
                        units=t, unit_name="tokens")
