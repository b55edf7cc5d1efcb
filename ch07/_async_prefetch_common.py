"""Inputs for the async_prefetch pair: 64M floats (256 MiB) filtered in 16 KB tiles.

Both kernels run a persistent grid of CTAS_PER_SM CTAs per SM, the shape a tiled kernel
whose tiles fill shared memory ends up with; the lesson is what a CTA does while its next
tile is on the way.
"""
from __future__ import annotations

import torch

from ch07._common import CudaPair
from core.benchmark import Workload

N, TAPS, CTAS_PER_SM = 1 << 26, 32, 2


class FilterBench(CudaPair):
    source = "async_prefetch.cu"

    def make_inputs(self) -> None:
        self.x = self.randn(N)
        self.y = torch.full_like(self.x, float("nan"))
        self.ctas = CTAS_PER_SM * self.sm_count()

    def workload(self) -> Workload:
        return Workload(bytes=2 * N * 4, flops=2 * TAPS * N, flops_dtype="fp32")
