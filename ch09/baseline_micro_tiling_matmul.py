"""Baseline: chapter 7's 32x32 shared-memory tiled matmul, one output per thread.

Each FMA needs two shared-memory loads, so the kernel is bound by shared-memory bandwidth
(and its instruction issue), far below the SM's FMA rate.
"""
from __future__ import annotations

import torch

from ch09._micro_tiling_matmul_common import K, M, N, MicroTilingBench


class TiledMatmul(MicroTilingBench):
    def run(self, a: torch.Tensor) -> torch.Tensor:
        self.lib.launch_matmul_tiled(a, self.b, self.c, M, N, K)
        return self.c


get_benchmark = TiledMatmul

if __name__ == "__main__":
    from core.single import main
    main(TiledMatmul)
