"""Shared by the `atomics_batched` pair: a histogram of 2^26 Zipf-distributed keys.

Keys are token-like ids over 4096 bins with Zipf frequencies (P(k) ∝ 1/(k+1)): the hottest
bin gets ~11% of all keys, the top 10 ~35%, as word and token counts do. Keys are each call's
data (make_inputs); counts are int32 and must match exactly. Every launcher in
atomics_batched.cu zeroes the counts first, inside the call.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Requirements, Workload
from core.cuda_pair import CudaPair

N, BINS, ZIPF_S = 1 << 26, 4096, 1.0


def zipf_keys(count: int, bins: int, s: float, gen: torch.Generator) -> torch.Tensor:
    """`count` int32 keys in [0, bins) with P(k) ∝ (k + 1)^-s, by inverse CDF."""
    weights = torch.arange(1, bins + 1, device=gen.device, dtype=torch.float64).pow(-s)
    cdf = torch.cumsum(weights, 0) / weights.sum()
    u = torch.rand(count, generator=gen, device=gen.device, dtype=torch.float64)
    return torch.searchsorted(cdf, u, right=True).clamp_(max=bins - 1).to(torch.int32)


class HistogramBench(CudaPair):
    source = "atomics_batched.cu"
    requires = Requirements(cuda=True, nvcc=True, min_compute_capability=(9, 0))

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.counts = torch.full((BINS,), -1, dtype=torch.int32, device=ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return zipf_keys(N, BINS, ZIPF_S, self.generator(seed))

    def reference(self, keys: torch.Tensor) -> torch.Tensor:
        return torch.bincount(keys.long(), minlength=BINS)

    def workload(self) -> Workload:
        return Workload(bytes=N * 4 + BINS * 4, units=N, unit_name="keys")
