"""Shared by `distributed_reduction`: one step of a dataset-statistics pass over a sharded
dataset, the per-feature mean and variance needed on every rank.

A data pipeline standardizes features before its next stage (a quantizer or whitening
transform, a model's input layer), and it gets their statistics from a streaming pass over
the sharded dataset. Each rank holds its shard's batch on its GPU and sums every feature
column and the squares of its values (fp32 accumulation). The ranks then add their partial
sums, and every rank finishes mean = Σx/N and variance = Σx²/N − mean² on its GPU, where the
next stage normalizes. One call is one step of that pass: 512 rows × 4096 feature columns of
fp32 per rank (8 MiB, a batch of encoder embeddings, say), so the packed [Σx | Σx²] vector
the ranks exchange is 2 × 4096 fp32 values, 32 KiB. The two sides share the local sums and
the finish; only how the partials cross the ranks differs.

Why this size: the book sums a 200M-element shard on each GPU, 800 MB read locally against
a partial of a few bytes exchanged, so the local sum dominates both sides and the technique
barely shows. A statistics pass reads a few MB per rank per step: at HBM speed (3-4 TB/s)
8 MiB is a few microseconds, the order of one small NCCL all-reduce (~23 µs on 2×H200, see
ch04/_symmetric_memory_common.py), so the cross-rank step is a real part of the time.

make_inputs(seed) builds every rank's shard ([world, rows, features]); rank r reads row r,
and reference() computes the statistics of all of them on one device in fp64. Features get
different means (offsets in [-1, 1)) and spreads (scales in [0.5, 2)), as real columns have.

The pair runs on every GPU present (`bench run --gpus N` for fewer) and scales weakly: each
rank's shard is fixed, so the global batch grows with the GPUs while the 32 KiB each rank
contributes stays the same; the rate column is the GB/s of its shard each rank reads.
On a machine without GPUs both sides run on gloo ranks with host tensors, where "host
staged" and "on the device" are the same path (as in ch04's nccl_vs_gloo).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

ROWS, FEATURES = 512, 4096  # per rank, per step: 8 MiB of fp32


def partial_sums(shard: torch.Tensor) -> torch.Tensor:
    """[Σx, Σx²] of each feature column of this rank's [rows, features] shard: [2, features]."""
    return torch.stack((shard.sum(dim=0), shard.square().sum(dim=0)))


def finish(sums: torch.Tensor, count: int) -> torch.Tensor:
    """[mean, variance] of each feature from the all-ranks sums of `count` rows."""
    mean, mean_sq = (sums / count).unbind()
    return torch.stack((mean, mean_sq - mean * mean))


class DatasetStats(Benchmark):
    supports_cpu = True
    requires = Requirements(gpus=2, scales="weak")
    # Both sides sum each column in fp32, in whatever order the reduction kernel takes, then
    # add the ranks' partials (gloo's and NCCL's orders). Simulated with serial fp32 sums over
    # a shard's 512 rows (a kernel's tree order errs less), then over 2, 4 and 8 ranks, 5
    # seeds of 4096 columns: means within 1.2e-7 of fp64, variances within 7e-7. Offsets
    # |m| <= 1 and scales >= 0.5 keep E[x²] <= 5 var, so the cancellation in E[x²] - mean²
    # costs at most ~5x. rtol = atol = 1e-5 leaves > 10x headroom. Wrong answers are far
    # outside it: one rank's shard alone gives means off by ~0.03 (median over columns),
    # dividing by one rank's rows instead of all ranks' multiplies the means by the world.
    tolerance = Tolerance(rtol=1e-5, atol=1e-5)

    def setup(self, ctx: BenchContext) -> None:
        # a CPU's gloo ranks get a small shard: the same code path, in test time
        self.rows, self.features = (ROWS, FEATURES) if ctx.is_cuda else (64, 256)
        self.count = dist.get_world_size() * self.rows  # rows in the global batch

    def make_inputs(self, seed: int) -> torch.Tensor:
        gen = self.generator(seed)
        offset = torch.rand(self.features, generator=gen, device=self.device) * 2 - 1
        scale = 0.5 + 1.5 * torch.rand(self.features, generator=gen, device=self.device)
        shards = self.randn(dist.get_world_size(), self.rows, self.features, gen=gen)
        return shards * scale + offset

    def reference(self, shards: torch.Tensor) -> torch.Tensor:
        rows = shards.double().reshape(-1, self.features)  # every rank's rows
        return torch.stack((rows.mean(dim=0), rows.var(dim=0, correction=0)))

    def workload(self) -> Workload:
        # each rank reads its shard once; the 32 KiB of partials it exchanges is ~0.4% of that
        return Workload(bytes=self.rows * self.features * 4, units=self.rows, unit_name="rows")
