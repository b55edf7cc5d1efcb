"""Triton kernels of `quantization` and `quantization_dynamic`.

Weight-only (`quantization`, decode): y = (x @ q^T) * scale with int8 q [N, K] and one fp32
scale per output channel. At M = 16 tokens each weight byte feeds 16 multiply-adds, far
below any ridge point: the layer's time is the time to stream q (64 MB at K = N = 8192) out
of HBM, and the kernel's job is to keep enough bytes in flight on all 132 SMs.

- The weight is the MMA's A operand: a program loads an int8 [BLOCK_N, BLOCK_K] tile, rows
  contiguous in K (16-byte vector loads), converts it to x's dtype in registers (exact:
  |q| <= 127) and multiplies it by the [BLOCK_K, BLOCK_M] tile of x^T into an fp32
  [BLOCK_N, BLOCK_M] accumulator with tl.dot. Tokens are the MMA's narrow side (>= 16, rows
  past M load as zeros), so M = 1..16 cost the same weight traffic.
- Split-K: the grid is (M tiles, N / BLOCK_N, SPLIT_K). 8192 channels in tiles of 64 are only
  128 programs, one per SM with 4 idle; split four ways along K they are 512.
- The split-K reduction happens inside the same launch: each program stores its fp32
  partial in a workspace and takes a ticket from its tile's counter (an atomic add,
  acquire-release); the program that draws the last ticket sums the SPLIT_K partials in a
  fixed order (the result does not depend on arrival order), applies the per-channel scale
  once, writes y in x's dtype and resets the counter for the next call. One kernel launch
  per call: no memset, no second reduction kernel, nothing the host must enqueue besides it.

`Int8WeightOnlyLinear.tune()` times a few tiles (CUDA-graph replay, so the GPU's time and not
the host's launch) and keeps the fastest; the pair calls it in setup().

Dynamic (`quantization_dynamic`, prefill): `quantize_rows()` quantizes each token of x in one
pass (one program per row: amax, scale, round, store; 2 bytes read and 1 written per
element), and `int8_matmul_scaled()` multiplies int8 x by int8 W on the int8 tensor cores
(Hopper: wgmma, twice the bf16 rate) with an int32 accumulator in registers, applying
x_scale[m] * w_scale[n] in the epilogue and storing bf16: the int32 product never reaches
memory and no separate rescale pass runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import triton
import triton.language as tl

INT8_MAX = 127


# ----------------------------------------------------------------------- weight-only (decode)

@triton.jit
def _int8_weight_only_kernel(x_ptr, q_ptr, scale_ptr, y_ptr, ws_ptr, lock_ptr, M, N, K,
                             stride_xm, stride_qn, stride_ym,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             SPLIT_K: tl.constexpr, EVEN_K: tl.constexpr):
    pid_m = tl.program_id(0)  # fastest: programs sharing a weight tile run side by side (L2)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # tokens
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # output channels
    offs_k = tl.arange(0, BLOCK_K)
    k_per_split = tl.cdiv(K, SPLIT_K * BLOCK_K) * BLOCK_K
    k_start = pid_k * k_per_split
    x_ptrs = x_ptr + rows[:, None] * stride_xm + (k_start + offs_k)[None, :]
    q_ptrs = q_ptr + cols[:, None] * stride_qn + (k_start + offs_k)[None, :]
    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    for k0 in range(0, k_per_split, BLOCK_K):
        if EVEN_K:  # no mask along K: the loads stay 16-byte vectors
            x = tl.load(x_ptrs, mask=rows[:, None] < M, other=0.0)
            q = tl.load(q_ptrs, mask=cols[:, None] < N, other=0)
        else:
            ks = k_start + k0 + offs_k
            x = tl.load(x_ptrs, mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
            q = tl.load(q_ptrs, mask=(cols[:, None] < N) & (ks[None, :] < K), other=0)
        acc = tl.dot(q.to(x.dtype), tl.trans(x), acc)  # [BLOCK_N, BLOCK_K] @ [BLOCK_K, BLOCK_M]
        x_ptrs += BLOCK_K
        q_ptrs += BLOCK_K
    y_ptrs = y_ptr + rows[None, :] * stride_ym + cols[:, None]  # y[m, n] <- acc[n, m]
    y_mask = (rows[None, :] < M) & (cols[:, None] < N)
    if SPLIT_K == 1:
        scale = tl.load(scale_ptr + cols, mask=cols < N, other=0.0)
        tl.store(y_ptrs, (acc * scale[:, None]).to(y_ptr.dtype.element_ty), mask=y_mask)
    else:
        tile = pid_m * tl.num_programs(1) + pid_n
        tile_elems = BLOCK_N * BLOCK_M
        offs = tl.arange(0, BLOCK_N)[:, None] * BLOCK_M + tl.arange(0, BLOCK_M)[None, :]
        ws_tile = ws_ptr + tile * (SPLIT_K * tile_elems)
        tl.store(ws_tile + pid_k * tile_elems + offs, acc)
        tl.debug_barrier()  # every thread's partial is stored before the ticket is taken
        ticket = tl.atomic_add(lock_ptr + tile, 1, sem="acq_rel", scope="gpu")
        if ticket == SPLIT_K - 1:  # the last of the tile's programs reduces
            total = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
            for s in range(SPLIT_K):  # fixed order: deterministic sums
                total += tl.load(ws_tile + s * tile_elems + offs, cache_modifier=".cg")  # from L2
            scale = tl.load(scale_ptr + cols, mask=cols < N, other=0.0)
            tl.store(y_ptrs, (total * scale[:, None]).to(y_ptr.dtype.element_ty), mask=y_mask)
            tl.atomic_xchg(lock_ptr + tile, 0)  # ready for the next call


@dataclass(frozen=True)
class Tile:
    """One launch configuration of the weight-only kernel."""

    block_m: int = 16
    block_n: int = 64
    block_k: int = 256
    split_k: int = 4
    num_warps: int = 4
    num_stages: int = 3

    def __str__(self) -> str:
        return (f"{self.block_n}x{self.block_k} split{self.split_k} m{self.block_m} "
                f"w{self.num_warps} s{self.num_stages}")


def block_m_for(m: int) -> int:
    """Tokens per tile: tl.dot's minimum of 16, up to 64 (register file) for prefill-ish M."""
    return max(16, min(64, triton.next_power_of_2(m)))


def decode_tiles(m: int) -> list[Tile]:
    """The few tiles tune() tries. At N = 8192: 128, 256, 384, 512 and 1024 programs (one
    or two per SM fill the GPU in one wave; more programs, more loads in flight but a
    ragged second wave), 8-32 KB of weights per program per k-step."""
    bm = block_m_for(m)
    shapes = [(64, 256, 1, 4, 3), (64, 256, 2, 4, 3), (64, 256, 3, 4, 3), (64, 256, 4, 4, 3),
              (128, 128, 4, 4, 4), (128, 256, 2, 8, 3), (64, 128, 8, 4, 4), (32, 256, 4, 4, 3)]
    return [Tile(bm, bn, bk, sk, w, s) for bn, bk, sk, w, s in shapes]


class Int8WeightOnlyLinear:
    """y = (x @ q^T) * scale, q int8 [N, K] and scale fp32 [N] prepared once (setup()).

    Holds the per-tile split-K counters (int32, zero between calls). Two calls in flight at
    once on different streams would share them: one layer, one stream."""

    def __init__(self, q: torch.Tensor, scale: torch.Tensor, tile: Tile | None = None) -> None:
        assert q.dtype == torch.int8 and q.is_contiguous() and scale.dtype == torch.float32
        self.q, self.scale = q, scale
        self.tile = tile or Tile()
        self.locks = torch.zeros(0, dtype=torch.int32, device=q.device)

    def _locks_for(self, count: int) -> torch.Tensor:
        if self.locks.numel() < count:  # grows before graph capture: tune() calls every tile first
            self.locks = torch.zeros(count, dtype=torch.int32, device=self.q.device)
        return self.locks

    def __call__(self, x: torch.Tensor, tile: Tile | None = None) -> torch.Tensor:
        t = tile or self.tile
        m, k = x.shape
        n = self.q.shape[0]
        assert x.stride(1) == 1 and k == self.q.shape[1], "x [M, K] with rows contiguous"
        grid = (triton.cdiv(m, t.block_m), triton.cdiv(n, t.block_n), t.split_k)
        y = torch.empty(m, n, device=x.device, dtype=x.dtype)
        tiles = grid[0] * grid[1]
        ws = torch.empty(tiles * t.split_k * t.block_n * t.block_m if t.split_k > 1 else 1,
                         device=x.device, dtype=torch.float32)
        _int8_weight_only_kernel[grid](
            x, self.q, self.scale, y, ws, self._locks_for(tiles), m, n, k,
            x.stride(0), self.q.stride(0), y.stride(0),
            BLOCK_M=t.block_m, BLOCK_N=t.block_n, BLOCK_K=t.block_k, SPLIT_K=t.split_k,
            EVEN_K=k % (t.block_k * t.split_k) == 0, num_warps=t.num_warps, num_stages=t.num_stages)
        return y

    def tune(self, x: torch.Tensor, tiles: list[Tile] | None = None,
             check: Callable[[torch.Tensor], None] | None = None) -> dict[Tile, float]:
        """Time each tile on x (GPU µs per call, CUDA-graph replay), keep the fastest, return
        all timings. A tile that does not compile or launch here (shared memory, registers) is
        skipped, with the reason in `self.skipped`; `check(y)`, if given, must raise on a
        wrong answer."""
        from ch13._quantization_common import gpu_time_us

        timings: dict[Tile, float] = {}
        self.skipped: dict[Tile, str] = {}
        for t in tiles or decode_tiles(x.shape[0]):
            try:
                y = self(x, t)
            except Exception as exc:  # noqa: BLE001 - as triton.autotune: a tile that cannot run is not a candidate
                self.skipped[t] = f"{type(exc).__name__}: {str(exc)[:200]}"
                continue
            if check is not None:
                check(y)
            timings[t] = gpu_time_us(lambda t=t: self(x, t))
        if not timings:
            raise RuntimeError(f"no weight-only tile runs here: {self.skipped}")
        self.tile = min(timings, key=timings.get)
        return timings


# ----------------------------------------------------------------------- dynamic (prefill)

@triton.jit
def _quantize_rows_kernel(x_ptr, q_ptr, scale_ptr, K, stride_xm, stride_qm,
                          QMAX: tl.constexpr, ROUND: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_K)
    mask = offs < K
    x = tl.load(x_ptr + row * stride_xm + offs, mask=mask, other=0.0).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(x), axis=0) / QMAX, 1e-12)
    v = tl.minimum(tl.maximum(x / scale, -QMAX), QMAX)
    if ROUND:  # to the nearest integer, ties away from zero (torch.round: ties to even)
        v = tl.where(v >= 0, tl.floor(v + 0.5), -tl.floor(0.5 - v))
    tl.store(q_ptr + row * stride_qm + offs, v.to(q_ptr.dtype.element_ty), mask=mask)
    tl.store(scale_ptr + row, scale)


def quantize_rows(x: torch.Tensor, dtype: torch.dtype = torch.int8
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row symmetric quantization in one pass: (q [M, K] `dtype`, fp32 scale [M, 1]),
    x ≈ q * scale. int8 rounds to the nearest step; an fp8 dtype rounds in the cast."""
    m, k = x.shape
    assert x.stride(1) == 1
    qmax = INT8_MAX if dtype == torch.int8 else torch.finfo(dtype).max
    q = torch.empty(m, k, device=x.device, dtype=dtype)
    scale = torch.empty(m, 1, device=x.device, dtype=torch.float32)
    block = triton.next_power_of_2(k)
    _quantize_rows_kernel[(m,)](x, q, scale, k, x.stride(0), q.stride(0), QMAX=qmax,
                                ROUND=dtype == torch.int8, BLOCK_K=block,
                                num_warps=max(1, min(16, block // 512)))
    return q, scale


@triton.jit
def _int8_matmul_scaled_kernel(a_ptr, b_ptr, a_scale_ptr, b_scale_ptr, c_ptr, M, N, K,
                               stride_am, stride_bn, stride_cm,
                               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                               BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                               EVEN_K: tl.constexpr):
    # grouped order: GROUP_M tile-rows share each B tile while it is in L2
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_pid_n
    first_m = (pid // in_group) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_m
    pid_n = (pid % in_group) // group_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # rows past the edge read a valid row (modulo) and are never stored: no load masks on M, N
    a_ptrs = a_ptr + (offs_m % M)[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + (offs_n % N)[:, None] * stride_bn + offs_k[None, :]  # W [N, K]: K-major
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            a = tl.load(a_ptrs, mask=(k0 + offs_k)[None, :] < K, other=0)
            b = tl.load(b_ptrs, mask=(k0 + offs_k)[None, :] < K, other=0)
        acc = tl.dot(a, tl.trans(b), acc, out_dtype=tl.int32)  # int8 x int8 -> int32, exact
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    a_scale = tl.load(a_scale_ptr + offs_m, mask=offs_m < M, other=0.0)
    b_scale = tl.load(b_scale_ptr + offs_n, mask=offs_n < N, other=0.0)
    c = acc.to(tl.float32) * a_scale[:, None] * b_scale[None, :]
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], c.to(c_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@dataclass(frozen=True)
class GemmTile:
    block_m: int = 128
    block_n: int = 128
    block_k: int = 128
    group_m: int = 8
    num_warps: int = 8
    num_stages: int = 4

    def __str__(self) -> str:
        return (f"{self.block_m}x{self.block_n}x{self.block_k} g{self.group_m} "
                f"w{self.num_warps} s{self.num_stages}")


GEMM_TILES = [GemmTile(128, 256, 128, 8, 8, 3), GemmTile(128, 128, 128, 8, 8, 4),
              GemmTile(128, 128, 128, 8, 4, 4), GemmTile(256, 128, 128, 8, 8, 3),
              GemmTile(128, 256, 64, 8, 8, 4), GemmTile(64, 256, 128, 8, 4, 4)]


def int8_matmul_scaled(a: torch.Tensor, b: torch.Tensor, a_scale: torch.Tensor,
                       b_scale: torch.Tensor, tile: GemmTile = GemmTile(),
                       out_dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """(a @ b^T) * a_scale * b_scale^T: a int8 [M, K], b int8 [N, K] (both K-contiguous, the
    layout int8 tensor cores read), a_scale fp32 [M] or [M, 1], b_scale fp32 [N] -> [M, N]."""
    m, k = a.shape
    n = b.shape[0]
    assert a.stride(1) == 1 and b.stride(1) == 1 and b.shape[1] == k
    c = torch.empty(m, n, device=a.device, dtype=out_dtype)
    grid = (triton.cdiv(m, tile.block_m) * triton.cdiv(n, tile.block_n),)
    _int8_matmul_scaled_kernel[grid](
        a, b, a_scale, b_scale, c, m, n, k, a.stride(0), b.stride(0), c.stride(0),
        BLOCK_M=tile.block_m, BLOCK_N=tile.block_n, BLOCK_K=tile.block_k, GROUP_M=tile.group_m,
        EVEN_K=k % tile.block_k == 0, num_warps=tile.num_warps, num_stages=tile.num_stages)
    return c


def tune_gemm(a: torch.Tensor, b: torch.Tensor, a_scale: torch.Tensor, b_scale: torch.Tensor,
              tiles: list[GemmTile] | None = None,
              check: Callable[[torch.Tensor], None] | None = None) -> dict[GemmTile, float]:
    """GPU µs per call of each tile (CUDA-graph replay); tiles that do not compile or launch
    here are skipped (all of them: an error naming each reason)."""
    from ch13._quantization_common import gpu_time_us

    timings: dict[GemmTile, float] = {}
    skipped: dict[GemmTile, str] = {}
    for t in tiles or GEMM_TILES:
        try:
            c = int8_matmul_scaled(a, b, a_scale, b_scale, t)
        except Exception as exc:  # noqa: BLE001 - as triton.autotune: a tile that cannot run is not a candidate
            skipped[t] = f"{type(exc).__name__}: {str(exc)[:200]}"
            continue
        if check is not None:
            check(c)
        timings[t] = gpu_time_us(lambda t=t: int8_matmul_scaled(a, b, a_scale, b_scale, t))
    if not timings:
        raise RuntimeError(f"no int8 GEMM tile runs here: {skipped}")
    return timings
