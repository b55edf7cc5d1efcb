"""Inputs for the occupancy_tuning pair: a diagonal state-space scan (ssm_scan.cu).

196,608 channels (a batch of 48 x 4096 inner width) x 256 time steps x 16 states. x and y are
[256, 196608] fp32 (192 MiB each, ~4x a Hopper L2); A, B, C are [196608, 16] (12 MiB each).
One thread per channel. On a 132-SM H100 the channels make 2.91 waves of 512-thread blocks at
one block per SM and 1.94 waves of 256-thread blocks at three per SM, so neither side loses
much to a partly empty last wave.

A, B and C are the layer's parameters (drawn in setup()); x is the per-call input.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

STEPS, CHANNELS, STATE = 256, 196_608, 16  # STATE is fixed in ssm_scan.cu


class ScanBench(CudaPair):
    source = "ssm_scan.cu"
    # `tools occupancy-tuning ch08:occupancy_tuning`: the scan rebuilt per preset (block size,
    # launch bounds, register cap) from ssm_scan.cu's AISP_TUNE_* macros
    tuning_source = "ssm_scan.cu"
    tuning_query = "ssm_scan_tuned_occupancy"

    def run_tuned(self, lib, x: torch.Tensor) -> torch.Tensor:
        lib.launch_ssm_scan_tuned(x, self.a, self.b, self.c, self.y, STEPS, CHANNELS)
        return self.y

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        gen = self.generator(ctx.seed)
        # Decays in [0.5, 0.99): a stable recurrence whose states stay O(1).
        self.a = 0.5 + 0.49 * torch.rand(CHANNELS, STATE, generator=gen, device=ctx.device)
        self.b = self.randn(CHANNELS, STATE, gen=gen) / STATE**0.5
        self.c = self.randn(CHANNELS, STATE, gen=gen) / STATE**0.5
        self.y = torch.full((STEPS, CHANNELS), float("nan"), device=ctx.device)  # output

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(STEPS, CHANNELS, gen=self.generator(seed))  # x

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        """The same recurrence in float64, all channels at once, one time step at a time."""
        a, b, c = self.a.double(), self.b.double(), self.c.double()
        h = torch.zeros_like(a)
        y = torch.empty(STEPS, CHANNELS, dtype=torch.float64, device=x.device)
        for t in range(STEPS):
            h = a * h + b * x[t].double()[:, None]
            y[t] = (c * h).sum(dim=1)
        return y

    def workload(self) -> Workload:
        # x read and y written once, A/B/C read once; per step and state a FMUL and two FFMAs.
        moved = 4 * (2 * STEPS * CHANNELS + 3 * CHANNELS * STATE)
        return Workload(bytes=moved, flops=5 * STEPS * CHANNELS * STATE, flops_dtype="fp32")
