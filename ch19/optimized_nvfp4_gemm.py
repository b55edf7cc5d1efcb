"""Optimized: NVFP4 linear (e2m1 values, e4m3 scales per 16 values, fp32 per tensor), Blackwell.

setup() quantizes W [N, K] once: packed e2m1 [N, K/2] (0.5 byte per weight), its block
scales swizzled for cuBLAS. Every call quantizes x the same way (compiled: block amax, scale,
round, pack), then `torch._scaled_mm` multiplies on sm_100's fp4 tensor cores with the block
scales applied in the MMA; the product of the two tensor scales multiplies the bf16 output.

Not measured anywhere yet (the project's GPUs are Hopper): the call follows torch's own
NVFP4 tests and torchao's NVFP4Tensor; the first Blackwell run must verify it.
Precision change declared: NVFP4; tolerance in _nvfp4_gemm_common.py.
"""
from __future__ import annotations

import torch

from ch19._nvfp4_gemm_common import NVFP4_TOLERANCE, Nvfp4Bench, quantize_nvfp4, to_blocked
from core.benchmark import Workload


def quantize_activations(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    packed, block_scale, tensor_scale = quantize_nvfp4(x)
    return packed, to_blocked(block_scale), tensor_scale


class Nvfp4Linear(Nvfp4Bench):
    precision = "NVFP4 operands, block scales"  # declared: its workload() counts the narrower bytes
    tolerance = NVFP4_TOLERANCE

    def prepare(self) -> None:
        packed, block_scale, self.w_tensor_scale = quantize_nvfp4(self.weight)
        self.w4 = packed.view(torch.float4_e2m1fn_x2)  # [N, K/2]; .t() is b column-major
        self.w_scale = to_blocked(block_scale)
        del self.weight
        self.quantize = torch.compile(quantize_activations)
        self.quantize(self.make_inputs(self.ctx.seed))  # compile now, not in a timed call

    def run(self, x: torch.Tensor) -> torch.Tensor:
        packed, x_scale, x_tensor_scale = self.quantize(x)
        out = torch._scaled_mm(packed.view(torch.float4_e2m1fn_x2), self.w4.t(),
                               scale_a=x_scale, scale_b=self.w_scale, out_dtype=torch.bfloat16)
        return out * (x_tensor_scale * self.w_tensor_scale).to(out.dtype)

    def workload(self) -> Workload:
        s = self.shape
        t, k, n = s["tokens"], s["d_in"], s["d_out"]
        return Workload(bytes=2 * t * k + n * k // 2 + 2 * t * n, flops=2 * t * k * n,
                        flops_dtype="fp4", units=t, unit_name="tokens")


get_benchmark = Nvfp4Linear

if __name__ == "__main__":
    from core.single import main
    main(Nvfp4Linear)
