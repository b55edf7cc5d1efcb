"""Inputs for the warp_divergence pair: 64M floats in (-1, 1) (256 MiB in, 256 MiB out).

Each element gets a 64-term power series (63 FMAs); even and odd elements use different
series, which is what makes the naive kernel diverge.
"""
from __future__ import annotations

import torch

from core.benchmark import Workload
from core.cuda_pair import CudaPair

N, FMAS_PER_ELEMENT = 1 << 26, 63


class ActivationBench(CudaPair):
    source = "warp_divergence.cu"

    def make_inputs(self) -> None:
        self.x = torch.rand(N, generator=self.gen, device=self.device) * 2 - 1
        self.y = self.nan_like(self.x)

    def workload(self) -> Workload:
        return Workload(bytes=2 * N * 4, flops=2 * FMAS_PER_ELEMENT * N, flops_dtype="fp32")
