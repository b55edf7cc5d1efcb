"""Copy a matrix walking it column by column: neighbouring threads are a row apart.

Each warp's 32 loads land in 32 different 32-byte sectors, so the memory system moves
8x the bytes the copy needs. This is the mistake the chapter opens with.
"""
import torch

from ch07._copy_common import COLS, ROWS, CopyBench


class ColumnWalkCopy(CopyBench):
    teaching = True  # the book's deliberate mistake: its speedup is the lesson, not a headline

    def run(self, src: torch.Tensor) -> torch.Tensor:
        self.lib.launch_copy_column_walk(src, self.dst, ROWS, COLS)
        return self.dst


get_benchmark = ColumnWalkCopy

if __name__ == "__main__":
    from core.single import main
    main(ColumnWalkCopy)
