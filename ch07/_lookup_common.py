"""Inputs for the lookup pair: 1M random lookups into a 1M x 128 fp32 table (512 MiB).

The table is the pair's weights (an embedding table, drawn in setup() from ctx.seed); the
indices are each call's data (make_inputs).
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

TABLE_ROWS, DIM, LOOKUPS = 1 << 20, 128, 1 << 20


class LookupBench(CudaPair):
    source = "lookup.cu"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.table = self.randn(TABLE_ROWS, DIM, gen=self.generator(ctx.seed))
        self.out = torch.full((LOOKUPS, DIM), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return torch.randint(0, TABLE_ROWS, (LOOKUPS,), generator=self.generator(seed),
                             device=self.device)

    def reference(self, index: torch.Tensor) -> torch.Tensor:
        return self.table[index]  # both kernels live in lookup.cu: check against torch

    def workload(self) -> Workload:
        # Fewest bytes: each looked-up row read once, each output row written once, the index.
        return Workload(bytes=2 * LOOKUPS * DIM * 4 + LOOKUPS * 8)
