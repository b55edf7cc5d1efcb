"""`if (x > t) ... else ...` around two loops.

A divergent warp runs both regimes, one after the other, each with half its lanes masked off.
"""
import torch

from ch08._threshold_common import N, STEPS, THRESHOLD, ThresholdBench


class BranchyThreshold(ThresholdBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_threshold_branch(self.x, self.y, N, THRESHOLD, STEPS)
        return self.y


def get_benchmark() -> BranchyThreshold:
    return BranchyThreshold()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
