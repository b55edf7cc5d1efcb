"""Inputs for the double_buffered_pipeline pair: Y = X · W, X 1M x 64 fp32 (256 MiB), W 64 x 64.

A token projection computed in 64-row tiles (16 KB of X, 64x64x64 multiply-adds per tile): the
bytes and the FMAs per tile are about balanced on an H100, which is where overlapping them
pays most. Both kernels run a persistent grid at their natural residency: as many CTAs per SM
as the occupancy calculator says fit (`project_blocks_per_sm`). The first version pinned both
to one CTA per SM — the shape of Hopper GEMM and attention kernels whose CTA owns the SM —
where nothing else hides a tile's DRAM latency and double buffering measured 1.54x; with
several CTAs per SM the warp scheduler overlaps one CTA's loads with another's math by itself
(README.md).
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Requirements, Tolerance, Workload
from core.cuda_pair import CudaPair

ROWS, D = 1 << 20, 64


class ProjectionBench(CudaPair):
    source = "double_buffered_pipeline.cu"
    kernel = 0  # whose residency sets the grid: 0 the baseline kernel, 1 the optimized one
    requires = Requirements(nvcc=True, min_compute_capability=(8, 0))  # cp.async
    # Both kernels call the same tile function: same fmaf chain per output, bit-identical.
    tolerance = Tolerance(rtol=0.0, atol=0.0)
    # fp32 against float64 torch (the old setup() check's bounds), not bit for bit.
    reference_tolerance = Tolerance(rtol=1e-4, atol=1e-4)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.w = self.randn(D, D, gen=self.generator(ctx.seed)) / D ** 0.5  # the weights
        self.y = torch.full((ROWS, D), float("nan"), device=ctx.device)
        self.ctas = self.natural_grid("project_blocks_per_sm", self.kernel)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(ROWS, D, gen=self.generator(seed))

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        # The pair compares two kernels that share their tile math; check it against torch,
        # so a bug in the shared part cannot pass as "they agree".
        return x.double() @ self.w.double()

    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.launch(x)
        return self.y

    def launch(self, x: torch.Tensor) -> None:
        raise NotImplementedError

    def workload(self) -> Workload:
        return Workload(bytes=4 * (2 * ROWS * D + D * D), flops=2 * ROWS * D * D, flops_dtype="fp32")
