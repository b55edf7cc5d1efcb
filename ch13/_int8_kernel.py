"""Triton kernel of `quantization`: y = (x @ q^T) * scale, int8 weights dequantized in registers.

For decode-sized M (<= 16 tokens) every program owns BLOCK_N output channels and walks K:
it loads a [BLOCK_N, BLOCK_K] tile of int8 weights (1 byte each, rows contiguous in K), turns
it into x's dtype in registers, and multiplies the [16, BLOCK_K] activation tile into an
fp32 [16, BLOCK_N] accumulator with tl.dot (tensor cores; rows past M are masked to zero).
The per-channel scale is applied once at the end. The int8 weight never exists in bf16 in
memory: the layer reads half the bytes of the bf16 one. `triton.autotune` picks the tile
sizes per (M, N, K) on the first call, which the pair makes in setup().
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK_M = 16  # tl.dot's smallest M; decode batches of up to 16 tokens fit one tile row

CONFIGS = [triton.Config({"BLOCK_N": bn, "BLOCK_K": bk}, num_warps=w, num_stages=s)
           for bn in (16, 32, 64) for bk in (128, 256, 512) for w in (4, 8) for s in (3, 4)]


@triton.jit
def _int8_weight_only_kernel(x_ptr, q_ptr, scale_ptr, y_ptr, M, N, K,
                             stride_xm, stride_qn, stride_ym,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_n = tl.program_id(0)
    rows = tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        x = tl.load(x_ptr + rows[:, None] * stride_xm + ks[None, :],
                    mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        q = tl.load(q_ptr + cols[:, None] * stride_qn + ks[None, :],
                    mask=(cols[:, None] < N) & (ks[None, :] < K), other=0)
        acc = tl.dot(x, tl.trans(q.to(x.dtype)), acc)  # int8 -> bf16 is exact (|q| <= 127)
    scale = tl.load(scale_ptr + cols, mask=cols < N, other=0.0)
    y = acc * scale[None, :]
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], y.to(y_ptr.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


_tuned = triton.autotune(CONFIGS, key=["M", "N", "K"])(_int8_weight_only_kernel)


def int8_weight_only_linear(x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor,
                            tune: bool = True, block_n: int = 32, block_k: int = 128
                            ) -> torch.Tensor:
    """x [M <= 16, K] (bf16/fp16/fp32, rows contiguous) times int8 q [N, K] with fp32 scale [N]
    -> [M, N] in x's dtype. `tune=False` runs one fixed tile (the CPU interpreter tests)."""
    m, k = x.shape
    n = q.shape[0]
    assert m <= BLOCK_M and x.stride(1) == 1 and q.is_contiguous(), "decode-sized x, contiguous q"
    y = torch.empty(m, n, device=x.device, dtype=x.dtype)
    if tune:
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_N"]),)  # noqa: E731
        _tuned[grid](x, q, scale, y, m, n, k, x.stride(0), q.stride(0), y.stride(0), BLOCK_M=BLOCK_M)
    else:
        _int8_weight_only_kernel[(triton.cdiv(n, block_n),)](
            x, q, scale, y, m, n, k, x.stride(0), q.stride(0), y.stride(0),
            BLOCK_M=BLOCK_M, BLOCK_N=block_n, BLOCK_K=block_k)
    return y
