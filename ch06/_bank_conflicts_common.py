"""Inputs for the bank_conflicts pair: 32768 score tiles S = Q·Kᵀ, each 32 x 32 fp32.

Q, K and S are 128 MiB each (384 MiB moved per run, several times a Hopper L2). Every tile
does 32³ multiply-adds out of shared memory, so how the K tile is laid out there decides the
speed.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

TILES, TILE = 1 << 15, 32


class ScoresBench(CudaPair):
    source = "bank_conflicts.cu"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.s = torch.full((TILES, TILE, TILE), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = self.generator(seed)
        return self.randn(TILES, TILE, TILE, gen=gen), self.randn(TILES, TILE, TILE, gen=gen)

    def reference(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k = inputs  # every side runs the same tile code: check it against float64 torch
        return torch.bmm(q.double(), k.double().transpose(1, 2))

    def workload(self) -> Workload:
        return Workload(bytes=3 * TILES * TILE * TILE * 4, flops=2 * TILES * TILE**3,
                        flops_dtype="fp32")
