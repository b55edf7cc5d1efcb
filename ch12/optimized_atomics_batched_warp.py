"""Optimized, one step only: warp-aggregated global atomics (no shared memory).

The same one-thread-per-key grid as the baseline, but each warp groups equal keys with
__match_any_sync and issues one global atomicAdd per distinct key. Beside the privatized
variant, it shows how much of the gain comes from aggregation alone.
"""
import torch

from ch12._atomics_batched_common import BINS, N, HistogramBench


class WarpAggregatedAtomics(HistogramBench):
    def run(self, keys: torch.Tensor) -> torch.Tensor:
        self.lib.launch_hist_warp(keys, N, self.counts, BINS)
        return self.counts


get_benchmark = WarpAggregatedAtomics

if __name__ == "__main__":
    from core.single import main
    main(WarpAggregatedAtomics)
