"""Inputs for the lookup pair: 1M random lookups into a 1M x 128 fp32 table (512 MiB)."""
from __future__ import annotations

import torch

from core.benchmark import Workload
from core.cuda_pair import CudaPair

TABLE_ROWS, DIM, LOOKUPS = 1 << 20, 128, 1 << 20


class LookupBench(CudaPair):
    source = "lookup.cu"

    def make_inputs(self) -> None:
        self.table = self.randn(TABLE_ROWS, DIM)
        self.index = torch.randint(0, TABLE_ROWS, (LOOKUPS,), generator=self.gen,
                                   device=self.device)
        self.out = torch.full((LOOKUPS, DIM), float("nan"), device=self.device)

    def workload(self) -> Workload:
        # Fewest bytes: each looked-up row read once, each output row written once, the index.
        return Workload(bytes=2 * LOOKUPS * DIM * 4 + LOOKUPS * 8)
