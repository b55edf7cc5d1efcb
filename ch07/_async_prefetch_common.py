"""Inputs for the async_prefetch pair: 64M floats (256 MiB) filtered in 16 KB tiles.

Both kernels run a persistent grid at their natural residency: as many CTAs per SM as the
occupancy calculator says fit (`filter_blocks_per_sm`). The first version pinned both to one
CTA per SM — the shape of Hopper GEMM and attention kernels that keep an SM's shared memory
for their own tiles — where nothing else on the SM hides a tile's DRAM latency and double
buffering measured 1.47x. With several CTAs per SM the warp scheduler overlaps one CTA's loads
with another's compute by itself (README.md).
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

N, TAPS = 1 << 26, 16
TILE = 4096  # floats per tile, as in async_prefetch.cu


class FilterBench(CudaPair):
    source = "async_prefetch.cu"
    kernel = 0  # which kernel's residency sets the grid: 0 load-then-compute, 1 double-buffered

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.y = torch.full((N,), float("nan"), device=ctx.device)
        self.ctas = self.natural_grid("filter_blocks_per_sm", self.kernel, TAPS)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(N, gen=self.generator(seed))

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        # Both kernels share filter_tile(): y[i] = Σ_r w_r · x[(i + r) mod TILE] per tile,
        # w_r = 1.0f / (r + 1), here in float64.
        tiles = x.double().view(-1, TILE)
        y = torch.zeros_like(tiles)
        for r in range(TAPS):
            w = float(torch.tensor(1.0 / (r + 1), dtype=torch.float32))
            y += w * torch.roll(tiles, -r, dims=1)
        return y.view(-1)

    def workload(self) -> Workload:
        return Workload(bytes=2 * N * 4, flops=2 * TAPS * N, flops_dtype="fp32")
