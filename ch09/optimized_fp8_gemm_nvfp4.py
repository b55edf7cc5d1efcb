"""Variant (Blackwell only): the GEMM in NVFP4, e2m1 values with an e4m3 scale per 16 and an fp32 scale per tensor.

The book builds this GEMM with CuTe-DSL (and its CUTLASS FP4 GEMM takes the same NVFP4
operands); here `torch._scaled_mm` runs cuBLASLt's block-scaled kernel, the same sm_100
tensor-core instruction (`tcgen05.mma ... block_scale`). setup() quantized B once; each call
quantizes A (compiled), multiplies with the block scales applied inside the MMA, and multiplies
the bf16 output by the two tensor scales. On Hopper this variant SKIPs (no FP4 tensor cores);
`fp8_gemm` beside it is Hopper's narrowest GEMM. Not measured yet.
Precision change declared: NVFP4; tolerance and its derivation in `_fp8_gemm_fp4.py`.
"""
from __future__ import annotations

import torch

from ch09._fp8_gemm_fp4 import NVFP4_GEMM_TOLERANCE, Fp4GemmBench, nvfp4_operand


class Nvfp4Gemm(Fp4GemmBench):
    precision = "NVFP4 operands (e2m1, e4m3 scale per 16, fp32 per tensor)"
    tolerance = NVFP4_GEMM_TOLERANCE
    operand = staticmethod(nvfp4_operand)

    def run(self, a: torch.Tensor) -> torch.Tensor:
        a4, a_scale, a_tensor_scale = self.quantize(a)
        w_scale, w_tensor_scale = self.b_scales
        out = torch._scaled_mm(a4.view(torch.float4_e2m1fn_x2),
                               self.bt4.view(torch.float4_e2m1fn_x2).t(),
                               scale_a=a_scale, scale_b=w_scale, out_dtype=torch.bfloat16)
        return out * (a_tensor_scale * w_tensor_scale).to(out.dtype)


get_benchmark = Nvfp4Gemm

if __name__ == "__main__":
    from core.single import main
    main(Nvfp4Gemm)
