"""Baseline: threshold.cu's `threshold_select` — one element per thread, load then compute.

The fixed kernel of the `threshold` pair, launched as written there (ceil(n/256) CTAs of 256
threads): each thread waits for its own load before its 128-instruction chain, and the SM
hides that wait only with its other resident warps.
"""
import torch

from ch08._threshold_common import N, STEPS, THRESHOLD, ThresholdBench


class LoadThenCompute(ThresholdBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.lib.launch_threshold_select(x, self.y, N, THRESHOLD, STEPS)
        return self.y


get_benchmark = LoadThenCompute

if __name__ == "__main__":
    from core.single import main
    main(LoadThenCompute)
