"""Optimized (Blackwell only): the same GEMM warp-specialized: TMA warps, an MMA warp, epilogue warps.

`tl.range(..., warp_specialize=True)` on the K loop: Triton gives the TMA copies a partition
of their own (2 warps here) and the tcgen05 MMAs another (one warp), handing ring stages
between them through mbarriers, and leaves the kernel's 4 warps the epilogue (TMEM ->
registers -> TMA store), with `setmaxnreg` moving registers to where they are used. Same
tile, stages and instructions as the baseline; only who issues them changes. The CPU tests
compile it for sm_100 and find the partitions in its TTGIR and `setmaxnreg` in its PTX. Not
measured yet (the project's GPUs are Hopper, where the row SKIPs: `warp_specialization` shows
a TMA producer warp feeding CUDA-core math warps there).
"""
from __future__ import annotations

from dataclasses import replace

from ch10._matmul_tcgen05_common import Tcgen05MatmulBench


class WarpSpecializedTcgen05Matmul(Tcgen05MatmulBench):
    tile = replace(Tcgen05MatmulBench.tile, warp_specialize=True)


get_benchmark = WarpSpecializedTcgen05Matmul

if __name__ == "__main__":
    from core.single import main
    main(WarpSpecializedTcgen05Matmul)
