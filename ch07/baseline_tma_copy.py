"""Stage each tile through shared memory with 16-byte loads and stores by 256 threads."""
import torch

from ch07._tma_copy_common import N, StagedCopyBench


class ThreadStagedCopy(StagedCopyBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_staged_copy_threads(self.src, self.dst, N, self.ctas)
        return self.dst


def get_benchmark() -> ThreadStagedCopy:
    return ThreadStagedCopy()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
