"""Optimized: the same tile loop, autotuned over Hopper-sized tiles, in grouped program order.

`triton.autotune` benchmarks six configs (128-256 wide tiles, BLOCK_K 64, 4-8 warps, 3-4
stages) on the first call for this shape, here in setup(), and launches the fastest from
then on. Larger tiles reuse each shared-memory byte for more FLOPs (a 128 x 256 tile does
~85 FLOP per byte loaded, a 64 x 64 tile 32); the grouped order keeps the panels of A and B
that concurrently running programs read inside L2.
"""
from __future__ import annotations

import torch

from ch09._triton_matmul_common import MatmulBench


class TunedTritonMatmul(MatmulBench):
    def prepare(self) -> None:
        from ch09._triton_matmul_kernels import matmul_autotuned, matmul_tuned  # lazy: needs triton

        self.matmul = matmul_autotuned
        warmup = self.make_inputs(self.ctx.seed)  # throwaway data of the real shape
        self.matmul(warmup, self.b, self.c)  # autotunes on the first call (seconds), then cached
        self.best_config = str(matmul_tuned.best_config)  # which config won, for a debugger
        self.c.fill_(float("nan"))

    def run(self, a: torch.Tensor) -> torch.Tensor:
        return self.matmul(a, self.b, self.c)


get_benchmark = TunedTritonMatmul

if __name__ == "__main__":
    from core.single import main
    main(TunedTritonMatmul)
