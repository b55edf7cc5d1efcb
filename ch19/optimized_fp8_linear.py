"""Optimized: fp8 e4m3 linear with row-wise scales, `torch._scaled_mm` on Hopper's fp8 tensor cores.

setup() quantizes W once, one scale per output channel, and keeps only the fp8 copy
(1 byte per weight). Every call quantizes this batch's activations, one scale per token
(an amax per row, then scale-and-cast: compiled by torch.compile into fused kernels), then
`_scaled_mm` multiplies the e4m3 operands at twice the bf16 tensor-core rate and applies
both scale vectors in the GEMM's epilogue (scale_a [M, 1], scale_b [1, N]: cuBLASLt/CUTLASS
row-wise scaling; a bf16 output). The quantization of x is inside the timed call.

Precision change declared: e4m3 operands; tolerance derived in _fp8_linear_common.py.
On the CPU (supports_cpu) torch's reference _scaled_mm runs the same call at tiny sizes.
"""
from __future__ import annotations

import torch

from ch19._fp8_linear_common import FP8_ROWWISE_TOLERANCE, LinearBench, quantize_rowwise
from core.benchmark import Requirements, Workload


class Fp8RowwiseLinear(LinearBench):
    precision = "e4m3 operands, row-wise scales"  # declared: its workload() counts the narrower bytes
    requires = Requirements(min_compute_capability=(9, 0))  # fp8 tensor cores + row-wise _scaled_mm
    tolerance = FP8_ROWWISE_TOLERANCE

    def prepare(self) -> None:
        # W [N, K] row-major is Wᵀ [K, N] column-major: the layout _scaled_mm wants for b.
        self.w8, w_scale = quantize_rowwise(self.weight)
        self.w_scale = w_scale.t().contiguous()  # [1, N]: one scale per output channel
        del self.weight  # this side reads only the fp8 copy
        self.quantize = torch.compile(quantize_rowwise) if self.ctx.is_cuda else quantize_rowwise
        self.quantize(self.make_inputs(self.ctx.seed))  # compile now, not in a timed call

    def run(self, x: torch.Tensor) -> torch.Tensor:
        x8, x_scale = self.quantize(x)  # [M, K] e4m3, [M, 1] fp32: this call's activations
        return torch._scaled_mm(x8, self.w8.t(), scale_a=x_scale, scale_b=self.w_scale,
                                out_dtype=torch.bfloat16)

    def workload(self) -> Workload:
        s = self.shape
        t, k, n = s["tokens"], s["d_in"], s["d_out"]
        return Workload(bytes=2 * t * k + n * k + 2 * t * n, flops=2 * t * k * n, flops_dtype="fp8",
                        units=t, unit_name="tokens")


get_benchmark = Fp8RowwiseLinear

if __name__ == "__main__":
    from core.single import main
    main(Fp8RowwiseLinear)
