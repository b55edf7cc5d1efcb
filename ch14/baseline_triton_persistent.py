"""Baseline: the Triton tutorial's matmul, one program per output tile, autotuned.

A competent first Triton matmul: grouped tile order, `tl.dot` on wgmma, the tile shape
picked by `triton.autotune` from Hopper-sized candidates. It launches one program per tile
(2048 programs for 128 x 256 tiles at 8192^2): a program computes its tile, stores it and
exits, and the SM then starts the next program from scratch (prologue, first loads, launch
of a new CTA), with ~15.5 waves of programs over 132 SMs and a partial last wave.
"""
from __future__ import annotations

import torch

from ch14._triton_persistent_common import PersistentBench

TIMEOUT_S = 900  # autotuning compiles six configs per side (several seconds each)


class TileMatmul(PersistentBench):
    def prepare(self) -> None:
        from ch14._triton_persistent_kernels import matmul_tile, matmul_tile_tuned  # lazy

        self.matmul = matmul_tile
        self.matmul(self.make_inputs(self.ctx.seed), self.b, self.c)  # autotune, compile
        self.best_config = str(matmul_tile_tuned.best_config)  # which config won

    def run(self, a: torch.Tensor) -> torch.Tensor:
        return self.matmul(a, self.b, self.c)


get_benchmark = TileMatmul

if __name__ == "__main__":
    from core.single import main
    main(TileMatmul)
