"""Transpose through a padded [32][33] shared-memory tile: reads and writes both coalesce."""
import torch

from ch07._transpose_common import COLS, ROWS, TransposeBench


class TiledTranspose(TransposeBench):
    def run(self, src: torch.Tensor) -> torch.Tensor:
        self.lib.launch_transpose_smem_tiled(src, self.dst, ROWS, COLS)
        return self.dst


get_benchmark = TiledTranspose

if __name__ == "__main__":
    from core.single import main
    main(TiledTranspose)
