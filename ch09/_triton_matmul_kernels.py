"""Triton kernels of the `triton_matmul` pair (imported lazily: needs triton).

Both kernels run the same tile loop (`_tile`): a BLOCK_M x BLOCK_N tile of C accumulated in
fp32 over K in BLOCK_K steps with `tl.dot` (tensor cores: HGMMA on Hopper), stored in C's dtype
(bf16 here).
They differ in which tile each program computes and in how the tile sizes are chosen:

- `matmul_naive_kernel`: program ids walk C's tiles row by row, with fixed 64 x 64 x 32 tiles
  and Triton's default launch settings (4 warps, 3 stages).
- `matmul_grouped_kernel`: programs are grouped GROUP_M tile-rows at a time (the "swizzle"
  of the Triton tutorial), and `matmul_tuned` wraps it in `triton.autotune` over a few
  Hopper-sized tile shapes.

Sizes need not divide the tiles: rows/columns past the edge are wrapped on load (`% M`,
`% N`, always in bounds) and masked on store; the K tail is masked to zero on load.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
          stride_cm, stride_cn, pid_m, pid_n,
          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C[pid_m tile, pid_n tile] = A[rows, :] @ B[:, cols], fp32 accumulate, stored as C's dtype."""
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def matmul_naive_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                        stride_bn, stride_cm, stride_cn,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    grid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // grid_n  # row-major: consecutive programs sweep one tile-row of C
    pid_n = pid % grid_n
    _tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
          stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)


@triton.jit
def matmul_grouped_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                          stride_bn, stride_cm, stride_cn,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    # Grouped order: programs fill a column of GROUP_M tiles before moving right, so the
    # programs resident at one time share GROUP_M row-panels of A and a few column-panels of
    # B, which stay in L2, instead of one row-panel of A and every column-panel of B.
    per_group = GROUP_M * grid_n
    first_m = (pid // per_group) * GROUP_M
    group_m = min(grid_m - first_m, GROUP_M)  # the last group may be shorter
    pid_m = first_m + (pid % per_group) % group_m
    pid_n = (pid % per_group) // group_m
    _tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
          stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)


# Hopper-sized candidates: 128-256 wide tiles, BLOCK_K 64 (64 bf16 = 128 bytes per tile row,
# the widest shared-memory swizzle HGMMA reads), 3-4 stages (a 128x256x64 stage is 48 KiB).
def _config(block_m: int, block_n: int, warps: int, stages: int) -> triton.Config:
    return triton.Config({"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": 64, "GROUP_M": 8},
                         num_warps=warps, num_stages=stages)


TUNED_CONFIGS = [
    _config(128, 256, warps=8, stages=3),
    _config(256, 128, warps=8, stages=3),
    _config(128, 256, warps=8, stages=4),
    _config(128, 128, warps=8, stages=4),
    _config(128, 128, warps=4, stages=4),
    _config(128, 128, warps=4, stages=3),
]

matmul_tuned = triton.autotune(configs=TUNED_CONFIGS, key=["M", "N", "K"])(matmul_grouped_kernel)


def _args(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple:
    (M, K), (_, N) = a.shape, b.shape
    assert b.shape[0] == K and c.shape == (M, N)
    return (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
            c.stride(0), c.stride(1))


def matmul_naive(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
                 block_m: int = 64, block_n: int = 64, block_k: int = 32) -> torch.Tensor:
    M, N = c.shape
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
    matmul_naive_kernel[grid](*_args(a, b, c), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k)
    return c


def matmul_grouped(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, block_m: int,
                   block_n: int, block_k: int, group_m: int) -> torch.Tensor:
    """The grouped kernel with explicit tile sizes (the interpreter test uses small ones)."""
    M, N = c.shape
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
    matmul_grouped_kernel[grid](*_args(a, b, c), BLOCK_M=block_m, BLOCK_N=block_n,
                                BLOCK_K=block_k, GROUP_M=group_m)
    return c


def matmul_autotuned(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """The grouped kernel with the autotuner's best config for this (M, N, K).

    The first call for a new shape benchmarks every config (seconds); later calls reuse it.
    """
    M, N = c.shape

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    matmul_tuned[grid](*_args(a, b, c))
    return c
