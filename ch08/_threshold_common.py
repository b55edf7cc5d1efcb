"""Inputs for the threshold pair: 64M standard-normal floats (256 MiB) split at t = 0.

Half the elements fall on each side of the threshold, at random, so almost every warp
(all but a 2^-31 fraction) holds lanes of both kinds. threshold.cu runs STEPS damped
iterations of a cubic soft clipper whose constants depend on the side.
"""
from __future__ import annotations

import torch

from core.benchmark import Workload
from core.cuda_pair import CudaPair

N, STEPS, THRESHOLD = 1 << 26, 32, 0.0


class ThresholdBench(CudaPair):
    source = "threshold.cu"

    def make_inputs(self) -> None:
        self.x = self.randn(N)
        self.y = torch.full_like(self.x, float("nan"))

    def workload(self) -> Workload:
        # The useful work: one regime per element, a FMUL and three FFMAs per step.
        return Workload(bytes=2 * N * 4, flops=7 * STEPS * N, flops_dtype="fp32")
