"""Optimized: int8 dynamic quantization (int8 x int8 -> int32 on the int8 tensor cores).

setup() quantizes W per output channel, as the weight-only side does. run() quantizes
this call's activations per token (one scale per row of x: an amax, a scale, a round),
multiplies int8 by int8 into int32 with `torch._int_mm` (cuBLASLt IMMA, twice the bf16
tensor-core rate on Hopper), and rescales by the token scale times the channel scale into
bf16. The activation quantizer and the rescale are compiled (torch.compile) into a few
fused kernels; both are per-call work and timed.

Precision change declared: weights and activations rounded to int8, ~1.3% of an output's
std per output (tolerance derived in _quantization_common.py).
"""
from __future__ import annotations

import torch

from ch13._quantization_common import DYNAMIC_TOLERANCE, INT8_MAX, quantize_rows
from ch13.baseline_quantization_dynamic import Bf16PrefillLinear
from core.benchmark import Workload


def quantize_tokens(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row symmetric int8 of the activations: (int8 [M, K], fp32 scale [M, 1])."""
    scale = (x.float().abs().amax(dim=1, keepdim=True) / INT8_MAX).clamp_min(1e-12)
    return torch.round(x.float() / scale).clamp(-INT8_MAX, INT8_MAX).to(torch.int8), scale


def rescale(acc: torch.Tensor, x_scale: torch.Tensor, w_scale: torch.Tensor) -> torch.Tensor:
    return (acc.float() * x_scale * w_scale[None, :]).to(torch.bfloat16)


class Int8Dynamic(Bf16PrefillLinear):
    precision = "int8 weights and activations, per-row scales"  # declared: its workload() counts the narrower bytes
    negative_result = ("0.87x on an H100 at M=2048, K=N=8192: Hopper's int8 tensor cores run "
                       "at the fp8 rate, twice bf16, but quantizing the activations per token "
                       "and rescaling the int32 result in run() cost more than the GEMM saves")
    tolerance = DYNAMIC_TOLERANCE

    def prepare(self, w: torch.Tensor) -> None:
        q, self.w_scale = quantize_rows(w)
        self.qt = q.t()  # [K, N] column-major: the layout cuBLASLt's int8 GEMM takes for B
        compile_ = torch.compile if self.ctx.is_cuda else (lambda f: f)
        self.quantize, self.rescale = compile_(quantize_tokens), compile_(rescale)
        self.run(self.make_inputs(self.ctx.seed))  # compile now, not in a timed call

    def run(self, x: torch.Tensor) -> torch.Tensor:
        xq, x_scale = self.quantize(x)
        return self.rescale(torch._int_mm(xq, self.qt), x_scale, self.w_scale)

    def workload(self) -> Workload:
        m, k, n = self.sizes
        # the fewest bytes the work must move: bf16 x in, int8 W, bf16 y out (the int8 copy of
        # x and the int32 accumulator are this side's own traffic, not the pair's work); FLOPs
        # at the int8 rate, reported against the fp8 ceiling (same tensor-core rate on Hopper:
        # the harness has no int8 ceiling).
        return Workload(bytes=2 * m * k + n * k + 2 * m * n,
                        flops=2 * m * n * k, flops_dtype="fp8", units=m, unit_name="tokens")


get_benchmark = Int8Dynamic

if __name__ == "__main__":
    from core.single import main
    main(Int8Dynamic)
