"""Shared by the `zero_copy` pair: a kernel that reads a small per-step host buffer once.

Every step the host hands the GPU 256 KiB of fresh data: the step's parameters, the kind of
input metadata a serving engine rebuilds per decode step (token ids, positions, block
tables) or per-request sampling settings. It sits in pinned host memory (anything copied to
the GPU every step is kept there), and one kernel consumes each byte of it once. Both sides
run the same kernel from zero_copy.cu (out = x · 0.5 + 1, 16-byte loads); the baseline gives
it a device copy, the optimized side the host buffer itself.

Both sides take a few µs, less than the host's launch through ctypes, so they are timed by
CUDA-graph replay (`timing_mode = "graph"`): the GPU's time per step, as a serving engine
that replays its decode step as a graph sees it. `sweep_zero_copy.py` times the same two
sides from 4 KiB to 256 MiB (the `floats` attribute sets the size).
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

PARAM_FLOATS = 64 * 1024  # 256 KiB of fp32
SCALE, SHIFT = 0.5, 1.0


class ZeroCopyBench(CudaPair):
    source = "zero_copy.cu"
    timing_mode = "graph"
    floats = PARAM_FLOATS  # a multiple of 4 (the kernel loads float4)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.out = torch.full((self.floats,), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(seed)  # host data: drawn on the CPU, then pinned
        return torch.randn(self.floats, generator=gen).pin_memory()

    def reference(self, params: torch.Tensor) -> torch.Tensor:
        # both sides run zero_copy.cu's kernel: check the baseline against float64 torch
        return params.to(self.device, torch.float64) * SCALE + SHIFT

    def workload(self) -> Workload:
        return Workload(link_bytes=self.floats * 4, link="h2d")  # each byte crosses PCIe once
