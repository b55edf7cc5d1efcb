"""Select the regime's constants (FSEL, no branch), then run one loop for every lane.

A divergent warp paid for both regimes; now it pays for one. Same arithmetic per element.
"""
import torch

from ch08._threshold_common import N, STEPS, THRESHOLD, ThresholdBench


class SelectThreshold(ThresholdBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.lib.launch_threshold_select(x, self.y, N, THRESHOLD, STEPS)
        return self.y


get_benchmark = SelectThreshold

if __name__ == "__main__":
    from core.single import main
    main(SelectThreshold)
