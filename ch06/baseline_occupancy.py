"""Row softmax, one warp per row, launched as one 32-thread block per row (50% occupancy cap)."""
import torch

from ch06._occupancy_common import ROW, ROWS, SoftmaxBench


class WarpBlockSoftmax(SoftmaxBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_softmax_rows_warp32(self.x, self.y, ROWS, ROW)
        return self.y


def get_benchmark() -> WarpBlockSoftmax:
    return WarpBlockSoftmax()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
