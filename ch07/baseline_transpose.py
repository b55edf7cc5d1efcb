"""Naive transpose: coalesced reads, column-strided writes."""
import torch

from ch07._transpose_common import COLS, ROWS, TransposeBench


class NaiveTranspose(TransposeBench):
    def run(self, src: torch.Tensor) -> torch.Tensor:
        self.lib.launch_transpose_naive(src, self.dst, ROWS, COLS)
        return self.dst


get_benchmark = NaiveTranspose

if __name__ == "__main__":
    from core.single import main
    main(NaiveTranspose)
