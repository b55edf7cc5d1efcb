"""Optimized (Blackwell only): the same kernel with 128 x 256 tiles, its accumulator in TMEM.

`TMEM_TILE`: 128 x 256 x 64, the same 4 warps, 3 stages. The 128 KiB fp32 accumulator takes
256 of the SM's 512 tensor-memory columns and no registers until the epilogue, so a 4-warp CTA
owns twice the tile it could on Hopper (where the same tile spills: 256 accumulator registers
per thread) and moves a quarter fewer bytes per FLOP through shared memory.
Not measured yet (the project's GPUs are Hopper, where the row SKIPs: there ch09
`triton_matmul`'s tuned kernel holds this tile with 8 warps); the CPU tests compile both sides
for sm_100 and sm_90 and check the PTX and the register use.
"""
from __future__ import annotations

from ch08._tiling_tcgen05_common import TMEM_TILE, TcgenMatmulBench


class TmemSizedTile(TcgenMatmulBench):
    tile = TMEM_TILE


get_benchmark = TmemSizedTile

if __name__ == "__main__":
    from core.single import main
    main(TmemSizedTile)
