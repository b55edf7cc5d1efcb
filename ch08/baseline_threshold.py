"""`if (x > t) ... else ...` around two loops.

A divergent warp runs both regimes, one after the other, each with half its lanes masked off.
"""
import torch

from ch08._threshold_common import N, STEPS, THRESHOLD, ThresholdBench


class BranchyThreshold(ThresholdBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.lib.launch_threshold_branch(x, self.y, N, THRESHOLD, STEPS)
        return self.y


get_benchmark = BranchyThreshold

if __name__ == "__main__":
    from core.single import main
    main(BranchyThreshold)
