"""Stage tiles with the bulk-copy engine (TMA): 4 tiles in flight per CTA, one thread issuing."""
import torch

from ch07._tma_copy_common import N, StagedCopyBench
from core.benchmark import Requirements


class TmaStagedCopy(StagedCopyBench):
    kernel = 1  # its own residency sets its grid
    negative_result = ("at its natural residency the TMA copy only matches the thread-staged "
                       "copy (1.00-1.02x) and copy_vectorized's float4 copy is as fast: TMA pays "
                       "in the one-CTA-per-SM regime of GEMM/attention kernels (ch07/README.md)")
    requires = Requirements(nvcc=True, min_compute_capability=(9, 0))

    def run(self, src: torch.Tensor) -> torch.Tensor:
        self.lib.launch_staged_copy_tma(src, self.dst, N, self.ctas)
        return self.dst


get_benchmark = TmaStagedCopy

if __name__ == "__main__":
    from core.single import main
    main(TmaStagedCopy)
