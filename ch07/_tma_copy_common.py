"""Inputs for the tma_copy pair: 64M floats (256 MiB) streamed in 16 KB tiles.

Both kernels run one CTA per SM in a persistent loop over tiles (as in async_prefetch):
the thread-staged CTA has one 16 KB tile in flight, the TMA CTA four, issued by one thread.
"""
from __future__ import annotations

import torch

from core.benchmark import Workload
from core.cuda_pair import CudaPair

N, CTAS_PER_SM = 1 << 26, 1


class StagedCopyBench(CudaPair):
    source = "tma_copy.cu"

    def make_inputs(self) -> None:
        self.src = self.randn(N)
        self.dst = torch.full_like(self.src, float("nan"))
        self.ctas = CTAS_PER_SM * self.sm_count()

    def workload(self) -> Workload:
        return Workload(bytes=2 * N * 4)
