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
    requires = Requirements(gpus=2, scales="weak")
    supports_cpu = True  # the NCCL side runs on gloo ranks; the symmetric-memory side needs CUDA
    timing_mode = "graph"
    # n bf16 values summed with a rounding to bf16 after every add, on both sides in other
    # orders: NCCL's ring n-1 times per chunk, torch's one-shot kernel n-1 times too (bf16 adds
    # in rank order, `add_bf16x2`). The last rounding is within 2^-8 of the result (rtol); the
    # others are of partial sums S_2..S_(n-1) of unit normals (E S_k^2 = k), each off by up to
    # half an ulp, 2^-7.5 |S_k| / sqrt(12) RMS, which atol must cover: the sides differ by
    # sigma = 2^-7.5 sqrt(2 (2 + ... + (n-1)) / 12), 0.005 at 4 ranks and 0.012 at 8.
    # Simulated (20 seeds of the [n, 8, 8192] rows): up to 0.027 beyond rtol at 4, 0.065 at 8.
    # atol 0.1 is ~8 sigma at 8 ranks; a missing rank is off by ~1 on most values.
    tolerance = Tolerance(rtol=1e-2, atol=1e-1)

    def make_inputs(self, seed: int) -> torch.Tensor:
        gen = self.generator(seed)
        return self.randn(dist.get_world_size(), BATCH, HIDDEN, gen=gen, dtype=torch.bfloat16)

    def reference(self, rows: torch.Tensor) -> torch.Tensor:
        return rows.double().sum(dim=0)

    def workload(self) -> Workload:
        world = dist.get_world_size()
        return Workload(bus_bytes=2 * (world - 1) / world * BATCH * HIDDEN * 2)
