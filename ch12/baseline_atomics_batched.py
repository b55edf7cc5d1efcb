"""Baseline (teaching): one global atomicAdd per key.

The book's naive histogram: a thread per key, `atomicAdd(&counts[key], 1)`. Atomics to one
address are serialized at the L2, so with skewed keys the hot bins become queues and the
kernel runs far below HBM bandwidth (30x slower than the privatized kernel on an H100).
A competent engineer reaches for shared-memory privatization (or torch.bincount) first,
hence `teaching`: the pair shows the mechanism and stays out of headline numbers.
"""
import torch

from ch12._atomics_batched_common import BINS, N, HistogramBench


class GlobalAtomics(HistogramBench):
    teaching = True
    def run(self, keys: torch.Tensor) -> torch.Tensor:
        self.lib.launch_hist_global(keys, N, self.counts, BINS)
        return self.counts


get_benchmark = GlobalAtomics

if __name__ == "__main__":
    from core.single import main
    main(GlobalAtomics)
