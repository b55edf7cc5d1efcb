"""A coalesced copy, one 4-byte float per thread: what most people write first."""
import torch

from ch07._copy_common import CopyBench


class ScalarCopy(CopyBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_copy_scalar(self.src, self.dst, self.src.numel())
        return self.dst


def get_benchmark() -> ScalarCopy:
    return ScalarCopy()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
