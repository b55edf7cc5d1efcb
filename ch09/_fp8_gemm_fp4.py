"""Shared by the FP4 variants of `fp8_gemm` (Blackwell only): the same 8192^3 GEMM with 4-bit operands.

Both formats store each value as e2m1 (a 4-bit float: ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}), two per
byte, with a scale per small block of consecutive values along K that the tensor cores apply
inside the MMA (sm_100's `tcgen05.mma ... kind::mxf4nvf4` with block scales, at twice the fp8
rate). They differ in the block and its scale:

- NVFP4 (`fp8_gemm_nvfp4`): an e4m3 scale per 16 values and an fp32 scale per tensor that
  keeps the block scales inside e4m3's range. Its quantizer, e2m1 rounding and cuBLAS's
  swizzled scale layout (`to_blocked`) are ch19's (`ch19/_nvfp4_gemm_common.py`, tested there).
- MXFP4 (`fp8_gemm_mxfp4`, the OCP Microscaling format): an e8m0 scale (a power of two) per 32
  values, no tensor scale. Scales are chosen "RCEIL", as torch's own MX tests and NVIDIA's
  conversion do: the smallest power of two that maps the block's largest magnitude to <= 6, so
  nothing saturates; the coarser scale costs accuracy (below).

The weight B is quantized once in setup(); the activations A on every call in run(), compiled
(block amax, scale, round, pack, swizzle the scales), as the fp8 sides quantize theirs. Then
`torch._scaled_mm(a_fp4, b_fp4.t(), scale_a, scale_b)`, which dispatches to cuBLASLt's
block-scaled FP4 GEMM on sm_100. The book builds these GEMMs with CuTe-DSL and CUTLASS
(`nv_float4_t` operands on the sm100 block-scaled mainloop); neither is installed here, and
cuBLAS's kernels run the same tensor-core instruction. Hopper has no FP4 tensor cores: on an
H100/H200 these variants SKIP (compute capability 10.0) while the bf16 and fp8 sides run.

Tolerance, from a CPU emulation (tests/test_blackwell_rows.py: quantize, dequantize, multiply
in float64; N(0, 1) operands as here): e2m1 keeps 2 significant bits. NVFP4 moves a value by
9.5% of the values' spread (std), and the K errors of a dot product add in quadrature to
sigma = 0.135 * sqrt(K); MXFP4's power-of-two scales leave a block's largest value anywhere in
(3, 6], 11.5% per value and sigma = 0.163 * sqrt(K). The largest of 67M outputs' errors lies
near 5.7 sigma (0.77 and 0.93 * sqrt(K)). atol = 1.2 and 1.5 * sqrt(K) (about 9 sigma; ch19's
NVFP4 atol 1.2 is the same bound for unit-spread outputs), rtol = 2e-2 for the bf16 output and
the scale product's rounding. A wrong scale or layout errs by O(sqrt(K)) on a large share of
the outputs and still fails. That is what 4-bit operands cost at this K, against fp8's 3.8%.
"""
from __future__ import annotations

import math

import torch

from ch09._fp8_gemm_common import K, M, N, Fp8GemmBench
from ch19._nvfp4_gemm_common import (E2M1_MAX, e2m1_to_float, quantize_nvfp4, round_to_e2m1,
                                     to_blocked)
from core.benchmark import Requirements, Tolerance, Workload

MX_BLOCK = 32  # values per e8m0 scale
E8M0_BIAS = 127
NVFP4_GEMM_TOLERANCE = Tolerance(rtol=2e-2, atol=1.2 * math.sqrt(K))
MXFP4_GEMM_TOLERANCE = Tolerance(rtol=2e-2, atol=1.5 * math.sqrt(K))


def quantize_mxfp4(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x [R, C] (C a multiple of 32) -> (packed e2m1 uint8 [R, C/2], biased e8m0 exponents
    uint8 [R, C/32]) with x ≈ e2m1 · 2^(exponent - 127). Element 2j is the low nibble."""
    rows, cols = x.shape
    blocks = x.float().reshape(rows, cols // MX_BLOCK, MX_BLOCK)
    amax = blocks.abs().amax(-1)
    # RCEIL: the smallest power of two with amax / 2^e <= 6 (an all-zero block: e = -127)
    exponent = torch.ceil(torch.log2(amax / E2M1_MAX)).clamp(-E8M0_BIAS, E8M0_BIAS)
    scaled = blocks / torch.exp2(exponent)[..., None]
    codes = round_to_e2m1(scaled.clamp(-E2M1_MAX, E2M1_MAX)).reshape(rows, cols)
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    return packed, (exponent + E8M0_BIAS).to(torch.uint8)


def dequantize_mxfp4(packed: torch.Tensor, biased_exponent: torch.Tensor) -> torch.Tensor:
    rows = packed.shape[0]
    codes = torch.stack((packed & 15, packed >> 4), dim=-1).reshape(rows, -1, MX_BLOCK)
    scale = torch.exp2(biased_exponent.float() - E8M0_BIAS)[..., None]
    return (e2m1_to_float(codes) * scale).reshape(rows, -1)


def nvfp4_operand(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x -> (packed e2m1, swizzled e4m3 block scales, fp32 tensor scale) for _scaled_mm."""
    packed, block_scale, tensor_scale = quantize_nvfp4(x)
    return packed, to_blocked(block_scale), tensor_scale


def mxfp4_operand(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x -> (packed e2m1, swizzled biased e8m0 exponents as uint8) for _scaled_mm."""
    packed, exponent = quantize_mxfp4(x)
    return packed, to_blocked(exponent)


class Fp4GemmBench(Fp8GemmBench):
    """The FP4 sides: quantizer compiled in setup(), operands' bytes counted at 4 bits."""
    only_on = "Blackwell (FP4 tensor cores: compute capability 10.0)"

    # fp4 tensor cores; triton for the compiled quantizer
    requires = Requirements(min_compute_capability=(10, 0), modules=("triton",))
    # Each side sets `operand = staticmethod(nvfp4_operand)` or `staticmethod(mxfp4_operand)`:
    # its quantizer, for the weight once and (compiled) for the activations every call.

    def prepare(self) -> None:
        # _scaled_mm wants its second operand column-major: quantize B^T [N, K] row-major
        # (blocks run along K, as the MMA reads them) and pass the (K/2, N) transposed view.
        self.bt4, *self.b_scales = self.operand(self.b.t().contiguous())
        del self.b  # this side reads only the 4-bit copy
        self.quantize = torch.compile(self.operand)
        self.quantize(self.make_inputs(self.ctx.seed))  # compile now, not in a timed call

    def workload(self) -> Workload:
        # bf16 A (quantized in run()), 4-bit B, bf16 output; FLOPs at the fp4 roof.
        return Workload(bytes=2 * M * K + K * N // 2 + 2 * M * N, flops=2 * M * N * K,
                        flops_dtype="fp4")
