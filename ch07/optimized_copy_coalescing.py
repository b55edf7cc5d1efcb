"""Copy the matrix in memory order: a warp reads and writes one contiguous 128-byte line."""
import torch

from ch07._copy_common import CopyBench


class CoalescedCopy(CopyBench):
    def run(self, src: torch.Tensor) -> torch.Tensor:
        self.lib.launch_copy_scalar(src, self.dst, src.numel())
        return self.dst


get_benchmark = CoalescedCopy

if __name__ == "__main__":
    from core.single import main
    main(CoalescedCopy)
