"""The Triton row-softmax kernel of the autotuning pair (imported lazily: needs triton).

One program owns BLOCK_R rows and walks their columns in tiles of BLOCK_C. When a row fits
in one tile (ONE_TILE) it is read once, reduced and written; otherwise a first pass keeps a
running max and rescaled sum per row (online softmax) and a second pass writes
exp(x - max) / sum. BLOCK_R, BLOCK_C and num_warps are the launch configuration that the
pair searches; every configuration computes the same softmax.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl


@dataclass(frozen=True)
class LaunchConfig:
    block_r: int  # rows per program
    block_c: int  # columns per tile
    num_warps: int

    def __str__(self) -> str:
        return f"{self.block_r}x{self.block_c}/w{self.num_warps}"


@triton.jit
def softmax_rows_kernel(x_ptr, y_ptr, rows, cols, BLOCK_R: tl.constexpr,
                        BLOCK_C: tl.constexpr, ONE_TILE: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = r < rows
    base = r.to(tl.int64)[:, None] * cols  # int64: rows x cols passes 2^31 elements
    c = tl.arange(0, BLOCK_C)[None, :]
    if ONE_TILE:
        mask = row_ok[:, None] & (c < cols)
        x = tl.load(x_ptr + base + c, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=1)[:, None])
        tl.store(y_ptr + base + c, e / tl.sum(e, axis=1)[:, None], mask=mask)
    else:
        m = tl.full([BLOCK_R], -float("inf"), tl.float32)
        s = tl.zeros([BLOCK_R], tl.float32)
        for start in range(0, cols, BLOCK_C):
            mask = row_ok[:, None] & (start + c < cols)
            x = tl.load(x_ptr + base + start + c, mask=mask, other=-float("inf"))
            m_new = tl.maximum(m, tl.max(x, axis=1))
            s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
            m = m_new
        for start in range(0, cols, BLOCK_C):
            mask = row_ok[:, None] & (start + c < cols)
            x = tl.load(x_ptr + base + start + c, mask=mask, other=-float("inf"))
            tl.store(y_ptr + base + start + c, tl.exp(x - m[:, None]) / s[:, None], mask=mask)


def softmax_rows(x: torch.Tensor, y: torch.Tensor, config: LaunchConfig) -> torch.Tensor:
    """y = softmax(x, dim=1) for contiguous fp32 2-D x, launched with `config`."""
    assert x.ndim == 2 and x.is_contiguous() and y.shape == x.shape and y.is_contiguous()
    rows, cols = x.shape
    grid = (triton.cdiv(rows, config.block_r),)
    softmax_rows_kernel[grid](x, y, rows, cols, BLOCK_R=config.block_r,
                              BLOCK_C=config.block_c, ONE_TILE=cols <= config.block_c,
                              num_warps=config.num_warps)
    return y
