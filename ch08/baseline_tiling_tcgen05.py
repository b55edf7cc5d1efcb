"""Baseline (Blackwell only): a TMA + tcgen05 GEMM with the 128 x 128 tile a 4-warp CTA holds on Hopper.

The kernel of `_tiling_tcgen05_kernel.py` at `HOPPER_TILE`: 128 x 128 x 64 tiles, 4 warps, 4
stages, grouped program order. On sm_100 its accumulator already sits in tensor memory; only
the tile, carried over from Hopper where the registers decided it, is left as it was.
A kernel-writing lesson (`teaching`): for a plain GEMM the library call is what one writes
(ch10 `matmul_tcgen05_cublas` times it at this shape), so the speedup here is what the wider
tile is worth inside a hand-written kernel, not a headline. On Hopper the row SKIPs
(compute capability 10.0); tiling there is ch07 `matmul_tiled` (shared-memory tiles) and ch09
`micro_tiling_matmul` and `triton_matmul` (register tiles, tile shapes on wgmma).
"""
from __future__ import annotations

from ch08._tiling_tcgen05_common import HOPPER_TILE, TcgenMatmulBench


class HopperSizedTile(TcgenMatmulBench):
    teaching = True  # a hand-written GEMM slower than cuBLAS would be a strawman as a headline
    tile = HOPPER_TILE


get_benchmark = HopperSizedTile

if __name__ == "__main__":
    from core.single import main
    main(HopperSizedTile)
