"""Inputs for the tma_copy pair: 64M floats (256 MiB) streamed in 16 KB tiles.

Both kernels run a persistent loop over tiles at their natural residency (as many CTAs per
SM as fit, by the occupancy calculator): the thread-staged CTA has one 16 KB tile in flight,
the TMA CTA four, issued by one thread. The first version pinned both to one CTA per SM,
where the TMA kernel measured 1.39x (README.md).
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

N = 1 << 26


class StagedCopyBench(CudaPair):
    source = "tma_copy.cu"
    kernel = 0  # which kernel's residency sets the grid: 0 thread-staged, 1 TMA

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.dst = torch.full((N,), float("nan"), device=ctx.device)
        self.ctas = self.natural_grid("staged_copy_blocks_per_sm", self.kernel)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(N, gen=self.generator(seed))

    def reference(self, src: torch.Tensor) -> torch.Tensor:
        return src.clone()  # both kernels live in tma_copy.cu: check them against torch

    def workload(self) -> Workload:
        return Workload(bytes=2 * N * 4)
