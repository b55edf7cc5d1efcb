"""Shared by the `nvfp4_gemm` pair (Blackwell only): the fp8_linear layer in NVFP4.

NVFP4 stores each value as a 4-bit float, e2m1 (±{0, 0.5, 1, 1.5, 2, 3, 4, 6}), two per byte,
with two levels of scale: one e4m3 scale per block of 16 consecutive values along K, and one
fp32 scale per tensor that keeps the block scales inside e4m3's range. Blackwell's tensor
cores (sm_100) multiply e2m1 operands and apply the block scales inside the MMA, at twice the
fp8 rate; Hopper has no fp4 tensor cores, so on an H100/H200 both sides SKIP with the reason
(min_compute_capability 10.0). FP6 (e3m2/e2m3, MX block scales) is the same story: Blackwell
tensor cores only; it is not a separate pair here.

Same layer and shapes as `fp8_linear` (8192 tokens x 4096 -> 14336, bf16 baseline). The
weight is quantized once in setup(); the activations are quantized inside run(), every call.
`torch._scaled_mm(a_fp4, b_fp4, scale_a, scale_b)` takes the block scales in cuBLAS's
swizzled "128x4" layout (`to_blocked`, from cuBLAS's block-scaling-factors layout; torch's
own tests and torchao build it the same way); the two per-tensor scales multiply the output.

Tolerance, from the CPU emulation (tests/test_ch19.py dequantizes and multiplies in fp64,
256 x 1024 x 512, N(0, 1) activations, N(0, 1/K) weights): e2m1 keeps 2 significant bits,
so rounding moves a value by ~9.5% (std, relative to the values' spread) once the block
scale maps each block's largest value to 6. Outputs ~N(0, 1) move by 0.135 (std), at most
0.62 (4.6 sigma of 0.13M outputs); the GPU shape's 117M outputs put the largest near
6 sigma, ~0.8. atol 1.2 (~9 sigma), rtol 2e-2. That is what NVFP4 costs per layer, and why
deployments keep sensitive layers in fp8 or bf16.
"""
from __future__ import annotations

import torch

from ch19._fp8_linear_common import LinearBench
from core.benchmark import Requirements, Tolerance

BLOCK = 16  # values per e4m3 block scale
E2M1_MAX, E4M3_MAX = 6.0, 448.0
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)  # codes 0..7; bit 3 is the sign
NVFP4_TOLERANCE = Tolerance(rtol=2e-2, atol=1.2)


def round_to_e2m1(x: torch.Tensor) -> torch.Tensor:
    """x (fp32, |x| ≤ 6) -> 4-bit codes (uint8 0..15): nearest e2m1 value, sign in bit 3."""
    grid = torch.tensor(E2M1_VALUES, device=x.device)
    midpoints = (grid[1:] + grid[:-1]) / 2
    code = torch.bucketize(x.abs(), midpoints).to(torch.uint8)
    return code | ((x < 0).to(torch.uint8) << 3)


def e2m1_to_float(code: torch.Tensor) -> torch.Tensor:
    grid = torch.tensor(E2M1_VALUES, device=code.device)
    value = grid[(code & 7).long()]
    return torch.where((code & 8) != 0, -value, value)


def quantize_nvfp4(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x [R, C] (C a multiple of 16) -> (packed uint8 [R, C/2], e4m3 block scales [R, C/16],
    fp32 tensor scale) with x ≈ e2m1 · block_scale · tensor_scale. Element 2j is the low nibble."""
    rows, cols = x.shape
    blocks = x.float().reshape(rows, cols // BLOCK, BLOCK)
    tensor_scale = (blocks.abs().amax() / (E2M1_MAX * E4M3_MAX)).clamp_min(1e-12)
    block_scale = (blocks.abs().amax(-1) / E2M1_MAX / tensor_scale).to(torch.float8_e4m3fn)
    denom = block_scale.float()[..., None] * tensor_scale
    codes = round_to_e2m1(torch.where(denom > 0, blocks / denom, 0.0).clamp(-E2M1_MAX, E2M1_MAX))
    codes = codes.reshape(rows, cols)
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    return packed, block_scale, tensor_scale


def dequantize_nvfp4(packed: torch.Tensor, block_scale: torch.Tensor, tensor_scale: torch.Tensor
                     ) -> torch.Tensor:
    rows = packed.shape[0]
    codes = torch.stack((packed & 15, packed >> 4), dim=-1).reshape(rows, -1, BLOCK)
    return (e2m1_to_float(codes) * block_scale.float()[..., None] * tensor_scale).reshape(rows, -1)


def to_blocked(scales: torch.Tensor) -> torch.Tensor:
    """[R, C] block scales -> cuBLAS's swizzled layout: 128x4 tiles, each stored as 32x16
    (row r of a tile goes to (r % 32, 4 · (r // 32) + column)); R padded to 128, C to 4."""
    rows, cols = scales.shape
    pr, pc = -(-rows // 128), -(-cols // 4)
    padded = scales.new_zeros(pr * 128, pc * 4)
    padded[:rows, :cols] = scales
    tiles = padded.view(pr, 128, pc, 4).permute(0, 2, 1, 3)
    return tiles.reshape(-1, 4, 32, 4).transpose(1, 2).reshape(-1, 32, 16).flatten()


class Nvfp4Bench(LinearBench):
    supports_cpu = False  # fp4 GEMMs run on Blackwell tensor cores only
    only_on = "Blackwell (FP4 tensor cores: compute capability 10.0)"
    requires = Requirements(min_compute_capability=(10, 0))
