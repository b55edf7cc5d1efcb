"""A coalesced copy, one 4-byte float per thread: what most people write first."""
import torch

from ch07._copy_common import CopyBench


class ScalarCopy(CopyBench):
    def run(self, src: torch.Tensor) -> torch.Tensor:
        self.lib.launch_copy_scalar(src, self.dst, src.numel())
        return self.dst


get_benchmark = ScalarCopy

if __name__ == "__main__":
    from core.single import main
    main(ScalarCopy)
