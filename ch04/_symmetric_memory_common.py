"""Shared by `symmetric_memory`: the all-reduce of one decode step's activations.

In tensor-parallel decoding every layer all-reduces a [batch, hidden] bf16 tensor: 8 × 8192
here, 128 KiB, far below the sizes where NCCL reaches its bandwidth (~23 µs at any size up to
1 MiB on 2×H200, `hw peak --gpus 2`). Serving engines capture the decode step in a CUDA graph,
so the pair is timed the same way (`timing_mode = "graph"`): eager, both sides would time the
host's launches. make_inputs builds every rank's tensor ([world, batch, hidden]); rank r
contributes row r, and reference() is their sum on one device.

The pair runs on every GPU present (`bench run --gpus N` for fewer) and scales weakly: the
decode step's 128 KiB per rank is fixed, as in tensor-parallel serving on any GPU count, so
the one-shot kernel reads n-1 peers' buffers where NCCL's ring takes 2(n-1) steps.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from core.benchmark import Benchmark, Requirements, Tolerance, Workload

BATCH, HIDDEN = 8, 8192


class DecodeAllReduce(Benchmark):
    requires = Requirements(gpus=2, scales=True)
    supports_cpu = True  # the NCCL side runs on gloo ranks; the symmetric-memory side needs CUDA
    timing_mode = "graph"
    # n bf16 values summed: NCCL's ring rounds each partial sum to bf16 (n-1 times), the
    # one-shot kernel may accumulate in fp32 and round once. Two ranks differ by one bf16 ulp
    # (~0.8% of a value of 1); 8 ranks of unit normals by up to 0.035 beyond rtol (partial sums
    # up to ~10, simulated). A missing rank is off by ~1.
    tolerance = Tolerance(rtol=1e-2, atol=5e-2)

    def make_inputs(self, seed: int) -> torch.Tensor:
        gen = self.generator(seed)
        return self.randn(dist.get_world_size(), BATCH, HIDDEN, gen=gen, dtype=torch.bfloat16)

    def reference(self, rows: torch.Tensor) -> torch.Tensor:
        return rows.double().sum(dim=0)

    def workload(self) -> Workload:
        world = dist.get_world_size()
        return Workload(bus_bytes=2 * (world - 1) / world * BATCH * HIDDEN * 2)
