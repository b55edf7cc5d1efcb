"""Variant (Blackwell only): the tile loop fed by a TMA pipeline into tcgen05.mma, accumulator in TMEM.

The book's "tcgen05 TMA pipeline". Same product as the other sides (bf16 4096^3, grouped
program order), through ch08's Blackwell kernel (`ch08/_tiling_tcgen05_kernel.py`): A and B
tiles arrive by TMA (one thread asks the copy engine for a whole 128 x 64 or 64 x 256 tile,
`cp.async.bulk.tensor`, completing on an mbarrier) into a 3-stage shared-memory ring, and
`tl.dot` lowers to `tcgen05.mma`, which accumulates the 128 x 256 fp32 tile in tensor memory
rather than registers, so 4 warps hold a tile Hopper needs 8 for. One fixed config, the one ch08
`tiling_tcgen05` argues for; not autotuned, because nothing has been measured on Blackwell yet.
Divide its speedup by `triton_matmul_cublas`'s for its share of cuBLAS, and by
`triton_matmul`'s for what TMA and TMEM add to the tuned pointer-load kernel on the same GPU.
On Hopper this variant SKIPs (compute capability 10.0); the Hopper pair beside it is
`triton_matmul` itself, whose tuned kernel runs wgmma with cp.async-pipelined loads.
"""
from __future__ import annotations

import torch

from ch08._tiling_tcgen05_common import TCGEN05_REQUIRES, TMEM_TILE, tcgen05_unavailable
from ch09._triton_matmul_common import MatmulBench


class TmaTcgen05Matmul(MatmulBench):
    only_on = "Blackwell (tcgen05 and TMEM: compute capability 10.0)"
    requires = TCGEN05_REQUIRES

    def unavailable(self) -> str | None:
        return tcgen05_unavailable()

    def prepare(self) -> None:
        from ch08._tiling_tcgen05_kernel import matmul_tma  # lazy: needs triton

        self.matmul = matmul_tma
        self.matmul(self.make_inputs(self.ctx.seed), self.b, self.c, TMEM_TILE)  # compile now
        self.c.fill_(float("nan"))

    def run(self, a: torch.Tensor) -> torch.Tensor:
        return self.matmul(a, self.b, self.c, TMEM_TILE)


get_benchmark = TmaTcgen05Matmul

if __name__ == "__main__":
    from core.single import main
    main(TmaTcgen05Matmul)
