"""Row softmax, one warp per row, launched as one 32-thread block per row (50% occupancy cap)."""
import torch

from ch06._occupancy_common import ROW, ROWS, SoftmaxBench


class WarpBlockSoftmax(SoftmaxBench):
    # The gain exists only against 32-thread blocks (the per-SM block limit); every block size
    # from 64 to 1024 threads runs the same: the book's lesson, not a headline.
    teaching = True

    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.lib.launch_softmax_rows_warp32(x, self.y, ROWS, ROW)
        return self.y


get_benchmark = WarpBlockSoftmax

if __name__ == "__main__":
    from core.single import main
    main(WarpBlockSoftmax)
