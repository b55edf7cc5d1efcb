"""Inputs for the persistent pair: an MoE-style grouped projection, 128 experts, fp32.

Expert e owns a contiguous block of rows of X (32-160 tiles of 64 rows, drawn once from a
fixed seed so every run and every input seed has the same shape: 12,308 tiles, 787,712 rows,
192 MiB of X and as much of Y) and its own 64 x 64 weight W_e; Y = X_e · W_e for its rows.
Every tile is one CTA's work (stage W_e and the tile, 64x64x64 multiply-adds, write 16 KB):
a few microseconds.

The baseline launches one kernel per expert with one CTA per tile: the loop over experts of
a first MoE implementation. Each launch holds 32-160 CTAs, fewer than the GPU has slots for,
so every launch is a single short wave: launch gap, ramp-up, a tile's worth of latency, tail.
The optimized side launches one persistent kernel that pulls tiles of all experts from an
atomic counter, so the SMs stay busy from the first tile to the last.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Requirements, Tolerance, Workload
from core.cuda_pair import CudaPair

EXPERTS, D, TILE_ROWS = 128, 64, 64
MIN_TILES, MAX_TILES, SHAPE_SEED = 32, 160, 1234


def tiles_per_expert() -> torch.Tensor:
    """Ragged tile counts per expert; fixed (not from the input seed) so the workload is too."""
    g = torch.Generator().manual_seed(SHAPE_SEED)
    return torch.randint(MIN_TILES, MAX_TILES + 1, (EXPERTS,), generator=g)


TILE_COUNTS = tiles_per_expert()
TOTAL_TILES = int(TILE_COUNTS.sum())
ROWS = TOTAL_TILES * TILE_ROWS


class GroupedProjectionBench(CudaPair):
    source = "persistent.cu"
    requires = Requirements(nvcc=True)
    # Same per-tile code in both kernels: bit-identical outputs.
    tolerance = Tolerance(rtol=0.0, atol=0.0)
    # fp32 against float64 torch (the old setup() check's bounds), not bit for bit.
    reference_tolerance = Tolerance(rtol=1e-4, atol=1e-4)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        offsets = torch.zeros(EXPERTS + 1, dtype=torch.int32)
        offsets[1:] = torch.cumsum(TILE_COUNTS, 0)
        self.tile_offsets_host = offsets  # read by the baseline's launch loop on the CPU
        self.tile_offsets = offsets.to(ctx.device)  # read by the persistent kernel
        self.w = self.randn(EXPERTS, D, D, gen=self.generator(ctx.seed)) / D ** 0.5  # the experts
        self.y = torch.full((ROWS, D), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(ROWS, D, gen=self.generator(seed))

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        # Both sides share the tile code; check it against torch, expert by expert.
        rows = (self.tile_offsets_host * TILE_ROWS).tolist()
        y = torch.empty(ROWS, D, dtype=torch.float64, device=x.device)
        for e in range(EXPERTS):
            y[rows[e]:rows[e + 1]] = x[rows[e]:rows[e + 1]].double() @ self.w[e].double()
        return y

    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.launch(x)
        return self.y

    def launch(self, x: torch.Tensor) -> None:
        raise NotImplementedError

    def workload(self) -> Workload:
        return Workload(bytes=4 * (2 * ROWS * D + EXPERTS * D * D), flops=2 * ROWS * D * D,
                        flops_dtype="fp32")
