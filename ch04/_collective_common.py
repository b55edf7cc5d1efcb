"""Shared by `nccl_vs_gloo` and `reinit_comm`: an all-reduce (sum) of one fp32 message.

make_inputs(seed) builds every rank's message ([world, n]); rank r contributes row r, so
reference() is the plain sum of the rows on one device.

Both pairs run on every GPU present (`bench run --gpus N` for fewer) and scale weakly: the
message per rank is fixed, so each rank moves 2(n-1)/n of it and the bus bandwidth (the
rate column) is the number to compare across GPU counts.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from core.benchmark import Benchmark, Requirements, Tolerance, Workload


class AllReduceSum(Benchmark):
    supports_cpu = True
    requires = Requirements(gpus=2, scales="weak")
    # n ranks' fp32 values summed in different orders (ring, tree, gloo's) round n-1 times:
    # within 1e-6 at 8 ranks of unit normals, 1e-5 leaves headroom; a missing rank is off by ~1.
    tolerance = Tolerance(rtol=1e-5, atol=1e-5)
    elements = 1 << 10  # per rank; the pairs set their size

    def setup(self, ctx):
        self.n = self.elements if ctx.is_cuda else 1 << 10

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(dist.get_world_size(), self.n, gen=self.generator(seed))

    def reference(self, messages: torch.Tensor) -> torch.Tensor:
        return messages.double().sum(dim=0)

    def workload(self) -> Workload:
        # NCCL's bus bandwidth convention for all-reduce: 2(n-1)/n of the message per rank
        world = dist.get_world_size()
        return Workload(bus_bytes=2 * (world - 1) / world * self.n * 4)
