"""Triton matmul kernels of chapter 14 (imported lazily: needs triton).

C = A @ B (+ bias, GELU), A [M, K] and B [K, N] row-major, fp32 accumulation, C in its own
dtype (bf16 in the pairs). Two kernels, tuned over the same tile configurations:

- `matmul_tile_kernel`: one program per output tile (the Triton tutorial's matmul): loads
  through pointers (`tl.load`, cp.async on Hopper), grouped tile order, one launch of
  cdiv(M, BM) * cdiv(N, BN) programs, each computing its tile and exiting.
- `matmul_persistent_kernel`: one program per SM, each looping over tiles
  NUM_SMS apart; A, B and C move through TMA descriptors (host-side
  `triton.tools.tensor_descriptor.TensorDescriptor`, so no device allocator is needed).
  The tile loop is flattened (`tl.range(..., flatten=True)`) so the software pipeliner
  issues the next tile's first TMA loads while the current tile's epilogue runs, and no
  second wave of programs pays the launch and prologue again.

Out-of-range rows and columns: the pointer kernel wraps rows/columns on load (`% M`) and
masks its store; TMA zero-fills loads past the edge and clips stores, so any M, N, K work.
The persistent kernel also carries an optional fused epilogue (bias add, tanh GELU), used by
the `gemm_epilogue` pair.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """Grouped order: GROUP_M tile-rows at a time, so programs running together share
    panels of A and B in L2 (the tutorial's swizzle)."""
    per_group = GROUP_M * num_pid_n
    first_m = (tile_id // per_group) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)  # the last group may be shorter
    pid_m = first_m + (tile_id % per_group) % group_m
    pid_n = (tile_id % per_group) // group_m
    return pid_m, pid_n


@triton.jit
def matmul_tile_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                       stride_bn, stride_cm, stride_cn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_coords(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N),
                                GROUP_M)
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
def _gelu_tanh(x):
    # 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): the tanh
    # approximation F.gelu(approximate="tanh") and cuBLASLt's GELU epilogue compute.
    return x * tl.sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))


@triton.jit
def matmul_persistent_kernel(a_desc, b_desc, c_desc, bias_ptr, M, N, K,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                             NUM_SMS: tl.constexpr, HAS_BIAS: tl.constexpr,
                             GELU: tl.constexpr):
    start = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    # The epilogue recomputes its tile from its own counter (as the Triton tutorial does):
    # after flattening, the loads of tile i+1 and the epilogue of tile i are in flight
    # together, and separate counters keep their index math independent.
    tile_c = start - NUM_SMS
    for tile_id in tl.range(start, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([off_m, ki * BLOCK_K])  # one TMA copy per operand tile
            b = b_desc.load([ki * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)
        tile_c += NUM_SMS
        pid_m, pid_n = _tile_coords(tile_c, num_pid_m, num_pid_n, GROUP_M)
        if HAS_BIAS:
            cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0)
            acc = acc + bias.to(tl.float32)[None, :]
        if GELU:
            acc = _gelu_tanh(acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


# Hopper-sized tiles, the same list for both kernels: 128-256 wide, BLOCK_K 64 (128 bytes of
# bf16 per row, the widest shared-memory swizzle wgmma reads), 3-4 stages. A config that
# does not fit in shared memory (the TMA kernel also stages its C tile there for the store)
# fails to compile and the autotuner drops it.
def _config(bm: int, bn: int, warps: int, stages: int, **extra) -> triton.Config:
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 64, "GROUP_M": 8},
                         num_warps=warps, num_stages=stages, **extra)


TILES = [(128, 256, 8, 3), (256, 128, 8, 3), (128, 256, 8, 4), (128, 128, 8, 4),
         (128, 128, 4, 4), (128, 128, 4, 3)]


def _set_block_shapes(nargs: dict) -> None:
    """Autotune pre-hook: point the descriptors at the chosen config's tile shapes (the
    TMA box is part of the descriptor, so it changes with BLOCK_M/N/K)."""
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bk, bn]
    nargs["c_desc"].block_shape = [bm, bn]


matmul_tile_tuned = triton.autotune(configs=[_config(*t) for t in TILES],
                                    key=["M", "N", "K"])(matmul_tile_kernel)
matmul_persistent_tuned = triton.autotune(
    configs=[_config(*t, pre_hook=_set_block_shapes) for t in TILES],
    key=["M", "N", "K", "HAS_BIAS", "GELU"])(matmul_persistent_kernel)


def _tile_args(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple:
    (M, K), (_, N) = a.shape, b.shape
    assert b.shape[0] == K and c.shape == (M, N)
    return (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
            c.stride(0), c.stride(1))


def matmul_tile(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
                config: tuple[int, int, int, int] | None = None) -> torch.Tensor:
    """c = a @ b, one program per tile. `config` = (BM, BN, BK, GROUP_M) pins the tiles (the
    interpreter test uses small ones); None takes the autotuner's pick for this shape."""
    M, N = c.shape
    if config is None:
        def grid(meta):
            return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

        matmul_tile_tuned[grid](*_tile_args(a, b, c))
    else:
        bm, bn, bk, gm = config
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
        matmul_tile_kernel[grid](*_tile_args(a, b, c), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                 GROUP_M=gm)
    return c


def matmul_persistent(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, num_sms: int,
                      bias: torch.Tensor | None = None, gelu: bool = False,
                      config: tuple[int, int, int, int] | None = None) -> torch.Tensor:
    """c = gelu?(a @ b + bias?), one program per SM looping over tiles through TMA.

    The descriptors are built per call (a few µs of host work): A is the call's input. Their
    block shape is a placeholder until the config is known (the pre-hook sets it)."""
    (M, K), (_, N) = a.shape, b.shape
    assert b.shape[0] == K and c.shape == (M, N)
    bm, bn, bk, gm = config or (64, 64, 64, 8)
    a_desc = TensorDescriptor.from_tensor(a, [bm, bk])
    b_desc = TensorDescriptor.from_tensor(b, [bk, bn])
    c_desc = TensorDescriptor.from_tensor(c, [bm, bn])
    bias_arg = c if bias is None else bias  # never read when HAS_BIAS is False
    args = (a_desc, b_desc, c_desc, bias_arg, M, N, K)
    if config is None:
        def grid(meta):
            tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
            return (min(num_sms, tiles),)

        matmul_persistent_tuned[grid](*args, NUM_SMS=num_sms, HAS_BIAS=bias is not None,
                                      GELU=gelu)
    else:
        grid = (min(num_sms, triton.cdiv(M, bm) * triton.cdiv(N, bn)),)
        matmul_persistent_kernel[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm,
                                       NUM_SMS=num_sms, HAS_BIAS=bias is not None, GELU=gelu)
    return c
