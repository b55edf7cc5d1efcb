"""Baseline (Blackwell only): a TMA + tcgen05 GEMM, software-pipelined, every warp in one stream.

ch08's Blackwell kernel at its 128 x 256 x 64 tile with 3 stages: the same warps issue the TMA
copies ahead, wait on the mbarriers and issue the MMAs. `teaching`: a hand-written GEMM is a
kernel lesson; `matmul_tcgen05_cublas` is what one calls for a plain product. On Hopper the row
SKIPs (compute capability 10.0); `double_buffered_pipeline` shows pipelining there.
"""
from __future__ import annotations

from ch10._matmul_tcgen05_common import Tcgen05MatmulBench


class PipelinedTcgen05Matmul(Tcgen05MatmulBench):
    teaching = True  # slower than cuBLAS would make a strawman headline; a lesson instead


get_benchmark = PipelinedTcgen05Matmul

if __name__ == "__main__":
    from core.single import main
    main(PipelinedTcgen05Matmul)
