"""Stage each tile through shared memory with 16-byte loads and stores by 256 threads."""
import torch

from ch07._tma_copy_common import N, StagedCopyBench


class ThreadStagedCopy(StagedCopyBench):
    def run(self, src: torch.Tensor) -> torch.Tensor:
        self.lib.launch_staged_copy_threads(src, self.dst, N, self.ctas)
        return self.dst


get_benchmark = ThreadStagedCopy

if __name__ == "__main__":
    from core.single import main
    main(ThreadStagedCopy)
