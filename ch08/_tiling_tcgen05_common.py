"""Shared by the `tiling_tcgen05` pair (Blackwell only): the output tile one CTA can own once
its accumulator lives in tensor memory instead of registers.

C = A @ B, bf16 8192 x 8192 x 8192 (1.1 TFLOP), fp32 accumulation, bf16 output: A is the
per-call input, B a weight drawn in setup(). Both sides run one Triton kernel
(`_tiling_tcgen05_kernel.py`): TMA copies of A and B tiles into a ring of shared-memory stages,
`tl.dot` (tcgen05.mma on sm_100, accumulating in TMEM), a TMA store of the bf16 tile. They
differ only in the tile (`TileConfig`):

- baseline: 128 x 128 x 64, 4 warps, 4 stages: the widest tile a 4-warp CTA holds on Hopper,
  where wgmma accumulates in registers (a 128 x 128 fp32 tile is 128 registers per thread).
- optimized: 128 x 256 x 64, the same 4 warps, 3 stages. On Hopper that accumulator needs 256
  registers per thread, more than the 255 a thread may have: ptxas spills (the CPU test
  compiles this tile for sm_90 and finds the stack), so Hopper kernels split it over 8 warps
  (ch09's tuned configs). On Blackwell tcgen05.mma writes the accumulator into TMEM (128 lanes
  x 512 32-bit columns per SM; this tile takes 256 columns) and the warps touch it only in the
  epilogue (`tcgen05.ld`): for sm_100 ptxas gives the kernel 182 registers and no stack.

The wider tile moves a quarter fewer bytes per FLOP: each 64-deep k-step stages (128 + N) x 64
bf16 values for 2 * 128 * N * 64 FLOPs, 64 FLOP per byte at N = 128, 85 at N = 256, both from
HBM/L2 into shared memory and from shared memory into the tensor cores. That is chapter 7's
`matmul_tiled` lesson (data reuse by tiling) one level up, with the register budget of this
chapter deciding how far it can go. Not measured: the project's GPUs are Hopper, where both
sides SKIP (compute capability 10.0). What the Hopper pairs show instead: ch07 `matmul_tiled`
(shared-memory tiles), ch09 `micro_tiling_matmul` (register tiles) and `triton_matmul` (tile
shape and order on wgmma); ch10 `matmul_tcgen05_cublas` is the library at this shape.

Tolerance: both sides multiply the same bf16 values exactly and sum in fp32 in different
orders, then round to bf16: one bf16 ulp (<= 2^-7 of the value) apart at most, inside
rtol = 1e-2; atol = 1e-2 covers outputs near zero (fp32 sums of 8192 unit products agree to
~1e-3). `reference()` is a float64 matmul, so a shared indexing bug cannot pass.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

M = N = K = 8192

# tcgen05 and TMEM exist on compute capability 10.x (B200, B300, GB200, GB300) and 11.x
# (Thor); consumer Blackwell (12.x) has neither, so it is refused by unavailable() below.
TCGEN05_REQUIRES = Requirements(modules=("triton",), min_compute_capability=(10, 0))


def tcgen05_unavailable() -> str | None:
    """Why this GPU cannot run tcgen05.mma (asked once compute capability >= 10.0 is met)."""
    major, minor = torch.cuda.get_device_capability()
    if major not in (10, 11):
        return (f"needs tcgen05 tensor cores and tensor memory (compute capability 10.x or "
                f"11.x: B200, B300, GB200, GB300); this GPU is {major}.{minor}, which has "
                f"neither, so tl.dot would run on mma.sync instead")
    return None


@dataclass(frozen=True)
class TileConfig:
    """One launch configuration of the kernel in `_tiling_tcgen05_kernel.py`."""

    block_m: int
    block_n: int
    block_k: int = 64  # 64 bf16 = 128 bytes: the widest shared-memory swizzle the MMA reads
    group_m: int = 8  # grouped program order (ch09 triton_matmul): panels shared in L2
    num_warps: int = 4
    num_stages: int = 3
    warp_specialize: bool = False  # ch10 matmul_tcgen05: loader / MMA / epilogue warps


# Shared memory (Triton's count for sm_100): the ring of A and B tiles, 4 x 32 KiB and
# 3 x 48 KiB (the C tile's store buffer reuses it), of the 227 KiB a CTA may have.
HOPPER_TILE = TileConfig(128, 128, num_stages=4)
TMEM_TILE = TileConfig(128, 256, num_stages=3)


class TcgenMatmulBench(Benchmark):
    """C = A @ B on Blackwell; a side sets `tile` (or overrides prepare() and run())."""
    only_on = "Blackwell (tcgen05 and TMEM: compute capability 10.0)"

    requires = TCGEN05_REQUIRES
    tolerance = Tolerance(rtol=1e-2, atol=1e-2)
    tile: TileConfig = TMEM_TILE

    def unavailable(self) -> str | None:
        return tcgen05_unavailable()

    def setup(self, ctx: BenchContext) -> None:
        self.b = self.randn(K, N, gen=self.generator(ctx.seed), dtype=torch.bfloat16)  # weight
        self.c = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device=ctx.device)
        self.prepare()

    def prepare(self) -> None:
        """Compile the kernel for this side's tile on throwaway data, then re-arm the NaNs."""
        from ch08._tiling_tcgen05_kernel import matmul_tma  # lazy: needs triton

        self.matmul = matmul_tma
        self.matmul(self.make_inputs(self.ctx.seed), self.b, self.c, self.tile)
        self.c.fill_(float("nan"))

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(M, K, gen=self.generator(seed), dtype=torch.bfloat16)  # A

    def run(self, a: torch.Tensor) -> torch.Tensor:
        return self.matmul(a, self.b, self.c, self.tile)

    def reference(self, a: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a.double(), self.b.double())

    def workload(self) -> Workload:
        return Workload(bytes=2 * (M * K + K * N + M * N), flops=2 * M * N * K, flops_dtype="bf16")
