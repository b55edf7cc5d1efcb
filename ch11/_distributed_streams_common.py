"""Shared by `distributed_streams` (every GPU): a gradient all-reduce and independent compute.

In data-parallel training, the all-reduce of one layer's gradients is independent of work
that comes next, e.g. the next micro-batch's forward GEMMs. Each rank here holds a 256 MiB
fp32 gradient bucket and a [4096, 8192] bf16 activation that goes through two 8192 × 8192
GEMMs with a GELU between (1.1 TFLOP, ~1.4 ms on an H200); the all-reduce of 256 MiB takes
~0.9 ms over NVLink (`hw peak --gpus 2`). Serialized, a step costs their sum; overlapped,
ideally the longer of the two.

make_inputs builds every rank's values ([world, ...]); rank r takes row r, so reference()
can compute the sum of the buckets and the compute output on one device. Both sides return
(all-reduced gradients, compute output), the same kernels on the same values: NCCL sums the
fp32 buckets of the two communicators alike in practice, and the GEMMs are the same cuBLAS
calls.

The pair runs on every GPU present (`bench run --gpus N` for fewer) and scales weakly: the
bucket and the GEMMs per rank are fixed, so the compute stays ~1.4 ms while the all-reduce
grows with the GPU count (each rank moves 2(n-1)/n of its 256 MiB), and with it the share
that overlap can hide.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

GRAD_FLOATS = 64 * 1024 * 1024  # 256 MiB of fp32 per rank
TOKENS, MODEL = 4096, 8192


class DistributedStreamsBench(Benchmark):
    requires = Requirements(gpus=2, scales="weak")
    # effectively exact (see above); were NCCL to pick another reduction order for the second
    # communicator, n fp32 values summed differently stay within 1e-6 at 8 ranks: 1e-5 leaves
    # headroom, and a missing rank's bucket is off by ~1
    tolerance = Tolerance(rtol=1e-5, atol=1e-5)
    reference_tolerance = Tolerance(rtol=1e-2, atol=1e-2)  # bf16 GEMMs against float64

    def setup(self, ctx: BenchContext) -> None:
        gen = self.generator(ctx.seed)
        self.w1 = (self.randn(MODEL, MODEL, gen=gen) * MODEL ** -0.5).to(torch.bfloat16)
        self.w2 = (self.randn(MODEL, MODEL, gen=gen) * MODEL ** -0.5).to(torch.bfloat16)

    def make_inputs(self, seed: int) -> dict[str, torch.Tensor]:
        gen, world = self.generator(seed), dist.get_world_size()
        return {"grads": self.randn(world, GRAD_FLOATS, gen=gen),
                "x": self.randn(world, TOKENS, MODEL, gen=gen, dtype=torch.bfloat16)}

    def compute(self, x: torch.Tensor) -> torch.Tensor:
        """The independent work: the next layer's forward GEMMs."""
        return F.gelu(x @ self.w1) @ self.w2

    def reference(self, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        rank = dist.get_rank()
        h = F.gelu(inputs["x"][rank].double() @ self.w1.double())
        return inputs["grads"].double().sum(dim=0), h @ self.w2.double()

    def workload(self) -> Workload:
        world = dist.get_world_size()
        return Workload(bus_bytes=2 * (world - 1) / world * GRAD_FLOATS * 4,
                        flops=2 * 2 * TOKENS * MODEL * MODEL, flops_dtype="bf16")
