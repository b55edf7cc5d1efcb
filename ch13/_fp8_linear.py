"""A linear layer whose three GEMMs run in fp8 with per-tensor dynamic scales (torch._scaled_mm).

forward   y  = x · Wᵀ     x, W quantized to e4m3
backward  dx = dy · W     dy quantized to e5m2, W's e4m3 copy reused
          dW = dyᵀ · x    dy's e5m2 copy and x's e4m3 copy reused

`torch._scaled_mm(a, b, scale_a, scale_b)` computes (a·scale_a) @ (b·scale_b) with a
row-major and b column-major (cuBLASLt's fp8 layout rule on Hopper; e5m2 x e5m2 is not
supported, e5m2 x e4m3 is). Where a GEMM needs an operand transposed, its fp8 copy is
transposed with a contiguous copy: 1 byte per element. `mm_fp8` asserts the layout rule so
the CPU tests enforce it too.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


def quantize(t: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(t / scale as `dtype`, scale): scale = amax / dtype's largest value, fp32 scalar."""
    fmax = torch.finfo(dtype).max
    scale = (t.abs().amax().float() / fmax).clamp_min(1e-12)
    return (t.float() / scale).clamp(-fmax, fmax).to(dtype), scale


def mm_fp8(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor
           ) -> torch.Tensor:
    """(a·scale_a) @ (b·scale_b) in bf16; a [M, K] row-major, b [K, N] column-major."""
    assert a.stride(1) == 1 and b.stride(0) == 1, "_scaled_mm: a row-major, b column-major"
    return torch._scaled_mm(a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16)


class Fp8Linear(torch.autograd.Function):
    """y = x @ w.T with fp8 GEMMs; x [T, in] and w [out, in] bf16, T, in, out multiples of 16."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, quant: Callable = quantize
                ) -> torch.Tensor:
        x8, sx = quant(x, E4M3)
        w8, sw = quant(w, E4M3)
        ctx.save_for_backward(x8, sx, w8, sw)
        ctx.quant = quant
        return mm_fp8(x8, w8.t(), sx, sw)  # w8 [out, in] row-major = w.T column-major

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        x8, sx, w8, sw = ctx.saved_tensors
        g8, sg = ctx.quant(dy.contiguous(), E5M2)
        dx = mm_fp8(g8, w8.t().contiguous().t(), sg, sw)  # [T, out] @ [out, in]
        dw = mm_fp8(g8.t().contiguous(), x8.t().contiguous().t(), sg, sx)  # [out, T] @ [T, in]
        return dx, dw, None
