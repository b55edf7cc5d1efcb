"""Shared by the `thresholdtma` pair: the threshold pair's inputs and math, loads pipelined.

The work is `threshold`'s (ch08/_threshold_common.py, imported unchanged): 64M normal samples,
each through 32 damped steps of a cubic soft clipper whose constants depend on x > 0, with the
regime's constants selected (threshold.cu's `threshold_select`, the fixed kernel of that
pair). That kernel gives each thread one element: it loads x[i], waits for DRAM, then runs a
chain of 128 dependent instructions; while it waits, only the SM's other warps can issue.

The optimized sides (threshold_tma.cu) run a persistent grid-stride loop instead, at the
kernel's natural residency: as many 256-thread CTAs per SM as the occupancy calculator says
fit (18-22 registers and 2 KiB of shared memory allow the full 2048 threads per SM, the same
warps per SM as the baseline). `thresholdtma` issues element i + stride's load (cp.async
into a second shared-memory slot) before computing element i, so every load but the first
overlaps a compute; `thresholdtma_gridstride` is the same loop without the prefetch, so the
table separates what the persistent grid does from what the pipeline does.
"""
from __future__ import annotations

from ch08._threshold_common import ThresholdBench
from core.benchmark import BenchContext

GRIDSTRIDE, PIPELINED = 0, 1  # kernel ids of threshold_tma_blocks_per_sm


class PipelinedThresholdBench(ThresholdBench):
    """threshold_tma.cu's kernels on ThresholdBench's inputs, output buffer and reference."""

    source = "threshold_tma.cu"
    kernel = PIPELINED

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.ctas = self.natural_grid("threshold_tma_blocks_per_sm", self.kernel)
