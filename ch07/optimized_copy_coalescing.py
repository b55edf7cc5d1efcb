"""Copy the matrix in memory order: a warp reads and writes one contiguous 128-byte line."""
import torch

from ch07._copy_common import CopyBench


class CoalescedCopy(CopyBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_copy_scalar(self.src, self.dst, self.src.numel())
        return self.dst


def get_benchmark() -> CoalescedCopy:
    return CoalescedCopy()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
