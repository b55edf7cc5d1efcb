"""Variant (attribution): the same persistent grid-stride loop, loads not pipelined.

The grid and the loop of `thresholdtma`, without the prefetch: each element still waits for
its own load. Its speedup over the baseline is what the persistent grid alone does; the
`thresholdtma` side's speedup divided by this one is what overlapping the loads adds.
"""
import torch

from ch08._threshold_common import N, STEPS, THRESHOLD
from ch08._thresholdtma_common import GRIDSTRIDE, PipelinedThresholdBench


class GridStrideThreshold(PipelinedThresholdBench):
    kernel = GRIDSTRIDE

    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.lib.launch_threshold_gridstride(x, self.y, N, THRESHOLD, STEPS, self.ctas)
        return self.y


get_benchmark = GridStrideThreshold

if __name__ == "__main__":
    from core.single import main
    main(GridStrideThreshold)
