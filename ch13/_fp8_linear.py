"""A linear layer whose three GEMMs run in fp8 with per-tensor dynamic scales (torch._scaled_mm).

forward   y  = x · Wᵀ     x, W quantized to e4m3
backward  dx = dy · W     dy quantized to e5m2, W's e4m3 copy reused
          dW = dyᵀ · x    dy's e5m2 copy and x's e4m3 copy reused

`torch._scaled_mm(a, b, scale_a, scale_b)` computes (a·scale_a) @ (b·scale_b) with a
row-major and b column-major: on Hopper cuBLASLt's fp8 GEMMs take both operands K-major
("TN") only (e5m2 x e5m2 is not supported, e5m2 x e4m3 is). The forward GEMM reads x and W
K-major as they are stored; backward reduces over the other dimension of each (dx over W's
rows, dW over the tokens), so it needs transposed copies of W, x and dy. bf16 cuBLAS reads
any layout and needs none of them.

Every quantization therefore writes two fp8 copies, as Transformer Engine's cast-transpose
does: `quantize_t(t)` is one amax reduction (torch, one pass) and one Triton kernel that
reads t once in [64, 64] tiles and stores the tile and its transpose (the transpose goes
through shared memory, so both stores are coalesced). The first version cast to fp8 with a
compiled kernel and then transposed the fp8 copies with `.t().contiguous()`: an eager
strided copy, one byte per element (`python -m ch13.sweep_quantization` times both).
`mm_fp8` asserts the layout rule so the CPU tests enforce it too.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # a platform without triton: the torch path (CPU) still works
    triton = None

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
CAST_BLOCK = 64  # tile side of the cast-transpose kernel


def quantize(t: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(t / scale as `dtype`, scale): scale = amax / dtype's largest value, fp32 scalar."""
    fmax = torch.finfo(dtype).max
    scale = (t.abs().amax().float() / fmax).clamp_min(1e-12)
    return (t.float() / scale).clamp(-fmax, fmax).to(dtype), scale


def quantize_t_torch(t: torch.Tensor, dtype: torch.dtype
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(q, qᵀ contiguous, scale) in torch ops: the CPU path and the reference of quantize_t."""
    q, scale = quantize(t, dtype)
    return q, q.t().contiguous(), scale


if triton is not None:
    @triton.jit
    def _cast_transpose_kernel(t_ptr, amax_ptr, q_ptr, qt_ptr, scale_ptr, R, C,
                               FMAX: tl.constexpr, BLOCK: tl.constexpr):
        pid_r = tl.program_id(0)
        pid_c = tl.program_id(1)
        scale = tl.maximum(tl.load(amax_ptr).to(tl.float32) / FMAX, 1e-12)
        rows = pid_r * BLOCK + tl.arange(0, BLOCK)
        cols = pid_c * BLOCK + tl.arange(0, BLOCK)
        mask = (rows[:, None] < R) & (cols[None, :] < C)
        t = tl.load(t_ptr + rows[:, None] * C + cols[None, :], mask=mask, other=0.0)
        q = tl.minimum(tl.maximum(t.to(tl.float32) / scale, -FMAX), FMAX).to(q_ptr.dtype.element_ty)
        tl.store(q_ptr + rows[:, None] * C + cols[None, :], q, mask=mask)
        tl.store(qt_ptr + cols[None, :] * R + rows[:, None], q, mask=mask)  # qᵀ[c, r] = q[r, c]
        if (pid_r == 0) & (pid_c == 0):
            tl.store(scale_ptr, scale)


def quantize_t(t: torch.Tensor, dtype: torch.dtype
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(q [R, C], qᵀ [C, R] contiguous, fp32 scale): one amax pass and one cast-transpose pass."""
    assert t.dim() == 2 and t.is_contiguous()
    r, c = t.shape
    amax = torch.linalg.vector_norm(t, float("inf"))  # max |t| in one reduction, exact in bf16
    q = torch.empty(r, c, device=t.device, dtype=dtype)
    qt = torch.empty(c, r, device=t.device, dtype=dtype)
    scale = torch.empty((), device=t.device, dtype=torch.float32)
    grid = (triton.cdiv(r, CAST_BLOCK), triton.cdiv(c, CAST_BLOCK))
    _cast_transpose_kernel[grid](t, amax, q, qt, scale, r, c, FMAX=torch.finfo(dtype).max,
                                 BLOCK=CAST_BLOCK, num_warps=4)
    return q, qt, scale


def mm_fp8(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor
           ) -> torch.Tensor:
    """(a·scale_a) @ (b·scale_b) in bf16; a [M, K] row-major, b [K, N] column-major."""
    assert a.stride(1) == 1 and b.stride(0) == 1, "_scaled_mm: a row-major, b column-major"
    return torch._scaled_mm(a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16)


class Fp8Linear(torch.autograd.Function):
    """y = x @ w.T with fp8 GEMMs; x [T, in] and w [out, in] bf16, T, in, out multiples of 16.
    `quant(t, dtype) -> (q, qᵀ, scale)`: quantize_t on a GPU, quantize_t_torch on a CPU."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, quant: Callable = quantize_t_torch
                ) -> torch.Tensor:
        x8, x8t, sx = quant(x, E4M3)
        w8, w8t, sw = quant(w, E4M3)
        ctx.save_for_backward(x8t, sx, w8t, sw)  # backward reads only the transposed copies
        ctx.quant = quant
        return mm_fp8(x8, w8.t(), sx, sw)  # w8 [out, in] row-major = w.T column-major

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        x8t, sx, w8t, sw = ctx.saved_tensors
        g8, g8t, sg = ctx.quant(dy.contiguous(), E5M2)
        dx = mm_fp8(g8, w8t.t(), sg, sw)  # [T, out] @ [out, in]; w8t [in, out] row-major
        dw = mm_fp8(g8t, x8t.t(), sg, sx)  # [out, T] @ [T, in]; x8t [in, T] row-major
        return dx, dw, None
