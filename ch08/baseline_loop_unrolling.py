"""Horner's rule one element at a time: a single chain of 127 dependent FFMAs per element.

Each FFMA waits ~4 cycles for the one before, and the next element's load only starts after
this one is stored; other resident warps hide part of that, not all of it.
"""
import torch

from ch08._loop_unrolling_common import N, PolyBench


class OneChain(PolyBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.lib.launch_poly_one_chain(x, self.y, N, self.grid(1))
        return self.y


get_benchmark = OneChain

if __name__ == "__main__":
    from core.single import main
    main(OneChain)
