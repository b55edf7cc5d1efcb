"""Inputs for the threshold pair: 64M standard-normal floats (256 MiB) split at t = 0.

Half the elements fall on each side of the threshold, at random, so almost every warp
(all but a 2^-31 fraction) holds lanes of both kinds. threshold.cu runs STEPS damped
iterations of a cubic soft clipper whose constants depend on the side.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

N, STEPS, THRESHOLD = 1 << 26, 32, 0.0
ABOVE, BELOW = (0.5, 0.125), (0.1, 0.25)  # (c, h) of each regime, as in threshold.cu


class ThresholdBench(CudaPair):
    source = "threshold.cu"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.y = torch.full((N,), float("nan"), device=ctx.device)  # output workspace

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(N, gen=self.generator(seed))  # x

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        """The same damped steps y <- y + h(x - y - c y^3) from y = 0, in float64."""
        x = x.double()
        above = x > THRESHOLD
        c = torch.full_like(x, BELOW[0]).masked_fill_(above, ABOVE[0])
        h = torch.full_like(x, BELOW[1]).masked_fill_(above, ABOVE[1])
        y = torch.zeros_like(x)
        for _ in range(STEPS):
            y += h * (x - y * (1 + c * y * y))
        return y

    def workload(self) -> Workload:
        # The useful work: one regime per element, a FMUL and three FFMAs per step.
        return Workload(bytes=2 * N * 4, flops=7 * STEPS * N, flops_dtype="fp32")
