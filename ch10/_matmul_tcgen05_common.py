"""Shared by the `matmul_tcgen05` pair (Blackwell only): a tcgen05 GEMM, then the same GEMM warp-specialized.

C = A @ B, bf16 8192 x 8192 x 8192, fp32 accumulation, bf16 output: ch08 `tiling_tcgen05`'s
product, inputs and float64 reference (`TcgenMatmulBench`), through the same Triton kernel
(`ch08/_tiling_tcgen05_kernel.py`) at ch08's 128 x 256 x 64 tile, 4 warps, 3 stages:

- baseline (the book's "matmul with tcgen05"): TMA loads into a 3-stage ring, `tcgen05.mma`
  into TMEM, software-pipelined by Triton: the kernel's warps issue the copies for stage
  k + 2, then wait for stage k and issue its MMA, all in one instruction stream.
- optimized (the book's "tcgen05 warp specialization"): the K loop with
  `tl.range(..., warp_specialize=True)`. Triton splits it into partitions that run side by
  side: one only issues TMA copies (Triton gives it 2 warps here), a single warp only issues
  MMAs (tcgen05.mma is issued by one thread and runs asynchronously, completing on an
  mbarrier), and the kernel's 4 warps only drain TMEM in the epilogue; `setmaxnreg` gives
  the busy partitions the registers the others do not need. This is ch10
  `warp_specialization`'s producer/consumer split (there: a TMA producer warp feeding
  CUDA-core math warps on Hopper), on Blackwell's tensor cores.
- `matmul_tcgen05_cublas`: `torch.matmul`, cuBLAS's own sm_100 kernels, the reference point.

The baseline is tagged `teaching`: for a plain GEMM the library call is what one writes, so
warp specialization inside a hand-written kernel is a lesson here, not a headline (it is what
kernels cuBLAS cannot provide, a GEMM with a fused epilogue or an attention kernel, are built
on). Not measured: on Hopper all three SKIP (compute capability 10.0). The Hopper pairs beside
it are `warp_specialization` (TMA producer warp, mbarrier ring) and `double_buffered_pipeline`
(cp.async two-stage pipeline), both with CUDA-core math.
Tolerance as in ch08's pair (same products and fp32 sums in different orders, bf16 output).
"""
from __future__ import annotations

from ch08._tiling_tcgen05_common import TMEM_TILE, TcgenMatmulBench


class Tcgen05MatmulBench(TcgenMatmulBench):
    """ch08's Blackwell GEMM at its TMEM-sized tile; a side changes the tile or the call."""

    tile = TMEM_TILE
