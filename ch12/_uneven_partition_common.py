"""Shared by the `uneven_partition` pair: row sums of a power-law CSR array.

2^20 rows over 2^25 fp32 values (128 MiB); row lengths follow a power law (Pareto, alpha
1.2): the median row has ~10 elements, the longest ~6·10^5 (a hub, ~2% of all values). Rows
and values are each call's data; the offsets array (int64, rows + 1) is CSR's own prefix sum
of the row lengths. y[r] is the sum of row r. The sides add in different orders (and the
optimized side adds a split row's parts with atomics), so fp32 sums differ by rounding:
values are in [0, 1), so there is no cancellation and 2e-4 relative covers it.
"""
from __future__ import annotations

import torch

from ch12._power_law import power_law_offsets
from core.benchmark import BenchContext, Requirements, Tolerance, Workload
from core.cuda_pair import CudaPair

ROWS, NNZ, ALPHA = 1 << 20, 1 << 25, 1.2

Inputs = tuple[torch.Tensor, torch.Tensor]  # offsets (int64, ROWS + 1), values (fp32, NNZ)


class RowSumsBench(CudaPair):
    source = "uneven_partition.cu"
    requires = Requirements(cuda=True, nvcc=True, min_compute_capability=(9, 0))
    tolerance = Tolerance(rtol=2e-4, atol=1e-5)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.y = torch.full((ROWS,), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> Inputs:
        gen = self.generator(seed)
        offsets = power_law_offsets(NNZ, ROWS, ALPHA, gen)
        return offsets, torch.rand(NNZ, generator=gen, device=self.device)

    def reference(self, inputs: Inputs) -> torch.Tensor:
        offsets, vals = inputs
        rows = torch.repeat_interleave(torch.arange(ROWS, device=vals.device), offsets.diff(),
                                       output_size=NNZ)
        return torch.zeros(ROWS, dtype=torch.float64, device=vals.device).index_add_(0, rows, vals.double())

    def workload(self) -> Workload:
        return Workload(bytes=NNZ * 4 + (ROWS + 1) * 8 + ROWS * 4, flops=NNZ, flops_dtype="fp32")
