"""Inputs for the async_prefetch pair: 64M floats (256 MiB) filtered in 16 KB tiles.

Both kernels run a persistent grid of one CTA per SM, the shape of Hopper GEMM and
attention kernels that keep an SM's shared memory for their own tiles. There, nothing else
on the SM hides a tile's DRAM latency, and what the CTA does while its next tile is on the
way decides the speed. (With 4 small CTAs per SM the warp scheduler overlaps one CTA's loads
with another's compute, and double buffering buys nothing: see README.md.)
"""
from __future__ import annotations

import torch

from core.benchmark import Workload
from core.cuda_pair import CudaPair

N, TAPS, CTAS_PER_SM = 1 << 26, 16, 1


class FilterBench(CudaPair):
    source = "async_prefetch.cu"

    def make_inputs(self) -> None:
        self.x = self.randn(N)
        self.y = torch.full_like(self.x, float("nan"))
        self.ctas = CTAS_PER_SM * self.sm_count()

    def workload(self) -> Workload:
        return Workload(bytes=2 * N * 4, flops=2 * TAPS * N, flops_dtype="fp32")
