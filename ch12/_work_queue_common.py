"""Shared by the `work_queue` pair: 2^20 items whose costs follow a power law.

Item i rotates the point (1, 0) by its rotation (cos t, sin t), 4·iters[i] times, and
returns where it lands (a float2). The rotations come precomputed, so the kernels' only math
is the rotation itself. Costs are Pareto-distributed (alpha 1.5, 16 to 2048 steps): the mean item
takes ~45 steps, but the costliest of 32 neighbours takes ~340 on average, which is what a
warp that gives each lane one item waits for. Angles and costs are each call's data
(make_inputs). Both sides run the same step() from work_queue.cu: answers agree to the bit.
"""
from __future__ import annotations

import torch

from ch12._power_law import power_law_counts
from core.benchmark import BenchContext, Requirements, Tolerance, Workload
from core.cuda_pair import CudaPair

N, ALPHA, LOW, HIGH = 1 << 20, 1.5, 16, 2048
ROT_PER_STEP = 4  # work_queue.cu

Inputs = tuple[torch.Tensor, torch.Tensor]  # rotations (fp32, N x 2: cos, sin), steps (int32)


class WorkQueueBench(CudaPair):
    source = "work_queue.cu"
    requires = Requirements(cuda=True, nvcc=True, min_compute_capability=(9, 0))
    tolerance = Tolerance(rtol=0.0, atol=0.0)
    # the closed form vs 4k fp32 rotations: rounding drift grows ~k·1e-7 (3.4e-4 measured on
    # a CPU at 8192 rotations); a wrong step count is off by O(1)
    reference_tolerance = Tolerance(rtol=0.0, atol=5e-3)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.out = torch.full((N, 2), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> Inputs:
        gen = self.generator(seed)
        angles = torch.rand(N, generator=gen, device=self.device) * 2 - 1  # radians
        rotations = torch.stack([torch.cos(angles), torch.sin(angles)], dim=1)
        return rotations, power_law_counts(N, ALPHA, LOW, HIGH, gen)

    def reference(self, inputs: Inputs) -> torch.Tensor:
        rotations, iters = inputs
        c, s = rotations.double().unbind(1)  # fp32 values, so |(c, s)| is 1 only to ~1e-7
        turns = ROT_PER_STEP * iters.double()
        total, scale = torch.atan2(s, c) * turns, torch.hypot(c, s).pow(turns)
        return torch.stack([scale * torch.cos(total), scale * torch.sin(total)], dim=1)

    def workload(self) -> Workload:
        return Workload(units=N, unit_name="items")  # FLOPs depend on the drawn costs
