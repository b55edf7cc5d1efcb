"""Inputs for the warp_specialization pair: a 7x7 filter over a 262144 x 256 fp32 image.

The input has 6 extra rows (262150 x 256, 256 MiB) so every output row sees 7 real input rows;
columns wrap around. Tiles are 32 output rows (38 input rows, 38 KB): per tile 32 KB of new
input, 32 KB of output and 32·256·49 multiply-adds, about balanced on an H100. Both kernels
run a persistent grid at their natural residency (`stencil_blocks_per_sm`: the baseline fits
two CTAs per SM, the warp-specialized kernel's 152 KB of stages one). The first version pinned
the baseline to one CTA per SM as well, and stored 1.69x (README.md).
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Requirements, Tolerance, Workload
from core.cuda_pair import CudaPair

OUT_ROWS, COLS, TAPS = 1 << 18, 256, 7
IN_ROWS = OUT_ROWS + TAPS - 1


class StencilBench(CudaPair):
    source = "warp_specialization.cu"
    kernel = 0  # whose residency sets the grid: 0 the baseline kernel, 1 the optimized one
    requires = Requirements(nvcc=True, min_compute_capability=(9, 0))  # TMA bulk copies
    # Same filter_tile() in both kernels: same fmaf chain per output, bit-identical.
    tolerance = Tolerance(rtol=0.0, atol=0.0)
    # fp32 against float64 torch (the old setup() check's bounds), not bit for bit.
    reference_tolerance = Tolerance(rtol=1e-4, atol=1e-4)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.taps = self.randn(TAPS, TAPS, gen=self.generator(ctx.seed)) / TAPS  # the filter
        self.y = torch.full((OUT_ROWS, COLS), float("nan"), device=ctx.device)
        self.ctas = self.natural_grid("stencil_blocks_per_sm", self.kernel)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(IN_ROWS, COLS, gen=self.generator(seed))

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        # Both kernels share filter_tile(); check it against float64 torch.
        x, expected = x.double(), torch.zeros(OUT_ROWS, COLS, dtype=torch.float64, device=x.device)
        for i in range(TAPS):
            for j in range(TAPS):  # x[r + i][(c + j - 3) mod 256]
                expected += self.taps[i, j].double() * torch.roll(x[i:i + OUT_ROWS], 3 - j, dims=1)
        return expected

    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.launch(x)
        return self.y

    def launch(self, x: torch.Tensor) -> None:
        raise NotImplementedError

    def workload(self) -> Workload:
        return Workload(bytes=4 * (IN_ROWS + OUT_ROWS) * COLS + 4 * TAPS * TAPS,
                        flops=2 * TAPS * TAPS * OUT_ROWS * COLS, flops_dtype="fp32")
