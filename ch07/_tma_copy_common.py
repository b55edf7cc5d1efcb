"""Inputs for the tma_copy pair: 64M floats (256 MiB) streamed in 16 KB tiles.

Both kernels run one CTA per SM in a persistent loop over tiles (as in async_prefetch):
the thread-staged CTA has one 16 KB tile in flight, the TMA CTA four, issued by one thread.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

N, CTAS_PER_SM = 1 << 26, 1


class StagedCopyBench(CudaPair):
    source = "tma_copy.cu"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.dst = torch.full((N,), float("nan"), device=ctx.device)
        self.ctas = CTAS_PER_SM * self.sm_count()

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(N, gen=self.generator(seed))

    def reference(self, src: torch.Tensor) -> torch.Tensor:
        return src.clone()  # both kernels live in tma_copy.cu: check them against torch

    def workload(self) -> Workload:
        return Workload(bytes=2 * N * 4)
