"""Stage tiles with the bulk-copy engine (TMA): 4 tiles in flight per CTA, one thread issuing."""
import torch

from ch07._tma_copy_common import N, StagedCopyBench
from core.benchmark import Requirements


class TmaStagedCopy(StagedCopyBench):
    requires = Requirements(nvcc=True, min_compute_capability=(9, 0))

    def run(self, src: torch.Tensor) -> torch.Tensor:
        self.lib.launch_staged_copy_tma(src, self.dst, N, self.ctas)
        return self.dst


get_benchmark = TmaStagedCopy

if __name__ == "__main__":
    TmaStagedCopy.main()
