"""The Triton RMSNorm kernel of the `triton_norm` pairs (imported lazily: needs triton).

One program per row: it loads the row once into registers (BLOCK = the row length rounded up
to a power of two, masked past the end), sums its squares in fp32, and writes the normalized,
weighted row once. The rounding follows F.rms_norm: normalize and multiply by the weight in
fp32, round once to the output dtype.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_cols, stride_x, stride_y, eps,
                    BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # row * stride passes 2^31 on large tensors
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def rms_norm_triton(x: torch.Tensor, w: torch.Tensor, eps: float,
                    out: torch.Tensor | None = None) -> torch.Tensor:
    """RMSNorm over the last dimension of a 2-D, row-contiguous `x`."""
    rows, cols = x.shape
    assert x.stride(1) == 1 and w.shape == (cols,)
    y = torch.empty_like(x) if out is None else out
    block = triton.next_power_of_2(cols)
    # ~16 elements per thread: 4 warps up to 2048 columns, 8 at 4096, 16 from 8192 on,
    # so a row's loads stay vectorized without spilling the row out of registers.
    warps = max(4, min(16, block // 512))
    rms_norm_kernel[(rows,)](x, w, y, cols, x.stride(0), y.stride(0), eps, BLOCK=block,
                             num_warps=warps)
    return y
