"""Naive transpose: coalesced reads, column-strided writes."""
import torch

from ch07._transpose_common import COLS, ROWS, TransposeBench


class NaiveTranspose(TransposeBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_transpose_naive(self.src, self.dst, ROWS, COLS)
        return self.dst


def get_benchmark() -> NaiveTranspose:
    return NaiveTranspose()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
