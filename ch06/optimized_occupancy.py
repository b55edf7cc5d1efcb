"""The same kernel at the block size cudaOccupancyMaxPotentialBlockSize picks (cached)."""
import torch

from ch06._occupancy_common import ROW, ROWS, SoftmaxBench


class OccupancyApiSoftmax(SoftmaxBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_softmax_rows_occupancy(self.x, self.y, ROWS, ROW)
        return self.y


def get_benchmark() -> OccupancyApiSoftmax:
    return OccupancyApiSoftmax()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
