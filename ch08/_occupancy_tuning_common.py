"""Inputs for the occupancy_tuning pair: a diagonal state-space scan (ssm_scan.cu).

196,608 channels (a batch of 48 x 4096 inner width) x 256 time steps x 16 states. x and y are
[256, 196608] fp32 (192 MiB each, ~4x a Hopper L2); A, B, C are [196608, 16] (12 MiB each).
One thread per channel. On a 132-SM H100 the channels make 2.91 waves of 512-thread blocks at
one block per SM and 1.94 waves of 256-thread blocks at three per SM, so neither side loses
much to a partly empty last wave.
"""
from __future__ import annotations

import ctypes

import torch

from core.benchmark import Workload
from core.cuda_pair import CudaPair

STEPS, CHANNELS, STATE = 256, 196_608, 16  # STATE is fixed in ssm_scan.cu


class ScanBench(CudaPair):
    source = "ssm_scan.cu"

    def make_inputs(self) -> None:
        self.x = self.randn(STEPS, CHANNELS)
        # Decays in [0.5, 0.99): a stable recurrence whose states stay O(1).
        self.a = 0.5 + 0.49 * torch.rand(CHANNELS, STATE, generator=self.gen, device=self.device)
        self.b = self.randn(CHANNELS, STATE) / STATE**0.5
        self.c = self.randn(CHANNELS, STATE) / STATE**0.5
        self.y = torch.full_like(self.x, float("nan"))  # unwritten elements fail verification

    def workload(self) -> Workload:
        # x read and y written once, A/B/C read once; per step and state a FMUL and two FFMAs.
        moved = 4 * (2 * STEPS * CHANNELS + 3 * CHANNELS * STATE)
        return Workload(bytes=moved, flops=5 * STEPS * CHANNELS * STATE, flops_dtype="fp32")

    def blocks_per_sm(self, threads: int) -> int:
        """Blocks of the 512- or 256-thread kernel that one SM holds, by CUDA's occupancy
        calculator on this device (after setup): 1 and 3 on Hopper."""
        blocks = ctypes.c_int64(0)
        self.lib.ssm_scan_blocks_per_sm(threads, ctypes.byref(blocks))
        return blocks.value
