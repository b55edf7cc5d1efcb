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

    def make_inputs(self) -> None:
        offsets = torch.zeros(EXPERTS + 1, dtype=torch.int32)
        offsets[1:] = torch.cumsum(TILE_COUNTS, 0)
        self.tile_offsets_host = offsets  # read by the baseline's launch loop on the CPU
        self.tile_offsets = offsets.to(self.device)  # read by the persistent kernel
        self.x = self.randn(ROWS, D)
        self.w = self.randn(EXPERTS, D, D) / D ** 0.5
        self.y = torch.full_like(self.x, float("nan"))

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        if not getattr(self, "_checked", False):
            # Both sides share the tile code; check it once against torch, expert by expert.
            self.run()
            rows = (self.tile_offsets_host * TILE_ROWS).tolist()
            for e in range(EXPERTS):
                x, y = self.x[rows[e]:rows[e + 1]], self.y[rows[e]:rows[e + 1]]
                expected = (x.double() @ self.w[e].double()).float()
                torch.testing.assert_close(y, expected, rtol=1e-4, atol=1e-4,
                                           msg=lambda m: f"{self.source} disagrees with torch "
                                                         f"(expert {e}): {m}")
            self.y.fill_(float("nan"))  # run() must write Y itself
            self._checked = True

    def run(self) -> torch.Tensor:
        self.launch()
        return self.y

    def launch(self) -> None:
        raise NotImplementedError

    def workload(self) -> Workload:
        return Workload(bytes=4 * (2 * ROWS * D + EXPERTS * D * D), flops=2 * ROWS * D * D,
                        flops_dtype="fp32")
