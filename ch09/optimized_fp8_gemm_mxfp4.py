"""Variant (Blackwell only): the GEMM in MXFP4, e2m1 values with a power-of-two (e8m0) scale per 32.

The OCP Microscaling format that CUTLASS's sm100 block-scaled FP4 GEMM takes besides NVFP4
(the book's CUTLASS FP4 GEMM uses NVFP4, which `fp8_gemm_nvfp4` covers); here through
`torch._scaled_mm`, which dispatches e8m0-scaled FP4 operands to cuBLASLt's MXFP4 kernel on
sm_100. Half as many scales as NVFP4 (one byte per 32 values) and no per-tensor scale, at the
price of coarser blocks: every scale is a power of two, so a block's largest value lands
anywhere in (3, 6] instead of at 6. On Hopper this variant SKIPs (no FP4 tensor cores);
`fp8_gemm` beside it is Hopper's narrowest GEMM. Not measured yet.
Precision change declared: MXFP4; tolerance and its derivation in `_fp8_gemm_fp4.py`.
"""
from __future__ import annotations

import torch

from ch09._fp8_gemm_fp4 import MXFP4_GEMM_TOLERANCE, Fp4GemmBench, mxfp4_operand


class Mxfp4Gemm(Fp4GemmBench):
    precision = "MXFP4 operands (e2m1, e8m0 scale per 32)"
    tolerance = MXFP4_GEMM_TOLERANCE
    operand = staticmethod(mxfp4_operand)

    def run(self, a: torch.Tensor) -> torch.Tensor:
        a4, a_scale = self.quantize(a)
        (w_scale,) = self.b_scales
        return torch._scaled_mm(a4.view(torch.float4_e2m1fn_x2),
                                self.bt4.view(torch.float4_e2m1fn_x2).t(),
                                scale_a=a_scale.view(torch.float8_e8m0fnu),
                                scale_b=w_scale.view(torch.float8_e8m0fnu),
                                out_dtype=torch.bfloat16)


get_benchmark = Mxfp4Gemm

if __name__ == "__main__":
    from core.single import main
    main(Mxfp4Gemm)
