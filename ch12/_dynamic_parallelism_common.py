"""Shared by the `dynamic_parallelism` pair: one grid per segment of uneven length.

2^24 fp32 elements cut into 1024 consecutive segments whose lengths follow a power law
(Pareto, alpha 1.2: the median segment has ~6K elements, the largest ~10^6). Every element
becomes y = w[s] · (a cubic in x) with its segment's weight w[s] (setup). Each call brings
new data and new boundaries (make_inputs); the boundaries come twice, as a CPU tensor for a
host that launches per segment and as a GPU tensor for kernels that read them. All sides run
the same per-element function (dynamic_parallelism.cu), so answers agree to the bit.
"""
from __future__ import annotations

import torch

from ch12._power_law import power_law_offsets
from core.benchmark import BenchContext, Requirements, Tolerance, Workload
from core.cuda_pair import CudaPair

N, SEGMENTS, ALPHA = 1 << 24, 1024, 1.2

Inputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # x, offsets (host), offsets (GPU)


class SegmentsBench(CudaPair):
    source = "dynamic_parallelism.cu"
    requires = Requirements(cuda=True, nvcc=True, min_compute_capability=(9, 0))
    tolerance = Tolerance(rtol=0.0, atol=0.0)  # the same float ops on every side
    reference_tolerance = Tolerance(rtol=1e-5, atol=1e-5)  # fp32 FMAs vs float64

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.w = self.randn(SEGMENTS, gen=self.generator(ctx.seed))
        self.y = torch.full((N,), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> Inputs:
        gen = self.generator(seed)
        x = self.randn(N, gen=gen)
        offsets = power_law_offsets(N, SEGMENTS, ALPHA, gen)
        return x, offsets.cpu(), offsets

    def reference(self, inputs: Inputs) -> torch.Tensor:
        x, _, offsets = inputs
        w = torch.repeat_interleave(self.w.double(), offsets.diff(), output_size=N)
        x = x.double()
        return w * ((0.25 * x * x - 0.5 * x + 1.0) * x + 0.125)

    def workload(self) -> Workload:
        return Workload(bytes=2 * N * 4 + (SEGMENTS + 1) * 8 + SEGMENTS * 4)
