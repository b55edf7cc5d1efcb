"""Inputs for the bank_conflicts pair: 32768 score tiles S = Q·Kᵀ, each 32 x 32 fp32.

Q, K and S are 128 MiB each (384 MiB moved per run, several times a Hopper L2). Every tile
does 32³ multiply-adds out of shared memory, so how the K tile is laid out there decides the
speed.
"""
from __future__ import annotations

from core.benchmark import Workload
from core.cuda_pair import CudaPair

TILES, TILE = 1 << 15, 32


class ScoresBench(CudaPair):
    source = "bank_conflicts.cu"

    def make_inputs(self) -> None:
        self.q = self.randn(TILES, TILE, TILE)
        self.k = self.randn(TILES, TILE, TILE)
        self.s = self.nan_like(self.q)

    def workload(self) -> Workload:
        return Workload(bytes=3 * TILES * TILE * TILE * 4, flops=2 * TILES * TILE**3,
                        flops_dtype="fp32")
