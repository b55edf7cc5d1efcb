"""Inputs for the cluster_multicast pair: Y = X · W, X 131072 x 32, W 32 x 512 (64 KB), fp32.

The workload of cluster_dsmem (a rank-32 up-projection, the B matrix of a LoRA adapter, over
131072 tokens), so the two pairs compare two ways of sharing one tile inside a cluster. Each
CTA takes 8 rows: 1 KB of X in, 16 KB of Y out, 131K multiply-adds, and it needs all 64 KB of
W in shared memory. Re-reading W dominates the traffic into the SMs: 16384 CTAs x 64 KB =
1 GiB from L2 for 272 MiB of X and Y, and about three CTAs per SM wait on it at once.

Both sides move every byte with the bulk-copy engine (TMA, `cp.async.bulk`) onto an mbarrier.
The baseline has every CTA copy W for itself. The optimized variants launch clusters of 2
(`cluster_multicast`) or 4 (`cluster_multicast_x4`) CTAs; each CTA copies a 1/2 or 1/4 share
of W once with `.multicast::cluster`, and the copy engine delivers it to every CTA of the
cluster: L2 serves W once per cluster. Not measured on a GPU yet (README.md).
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Requirements, Tolerance, Workload
from core.cuda_pair import CudaPair

ROWS, K, N = 1 << 17, 32, 512


class BulkWeightsBench(CudaPair):
    source = "cluster_multicast.cu"
    # cp.async.bulk and thread-block clusters need sm_90; the multicast form is built for
    # sm_90a, which core.cuda targets on Hopper.
    requires = Requirements(nvcc=True, min_compute_capability=(9, 0))
    # Same W in every CTA's shared memory, same tile function (projection_tile.cuh, one fmaf
    # chain per output in the same order): the sides must agree bit for bit.
    tolerance = Tolerance(rtol=0.0, atol=0.0)
    # fp32 against float64 torch. Each output is a chain of K = 32 fmaf: the rounding error is
    # at most about K · 2^-24 · Σ|x_k w_k|; with x ~ N(0, 1), w ~ N(0, 1/K), Σ|x_k w_k| averages
    # 32 · 0.8 · 0.8/√32 ≈ 3.6, so ≈ 7e-6, a few times that in the tails. 1e-4 leaves 5-10x of
    # room, while one lost or stale term (|x_k w_k| ≈ 0.1 on average) fails by three orders.
    reference_tolerance = Tolerance(rtol=1e-4, atol=1e-4)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.w = self.randn(K, N, gen=self.generator(ctx.seed)) / K ** 0.5  # the weights
        self.y = torch.full((ROWS, N), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(ROWS, K, gen=self.generator(seed))

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        # Both sides share the tile math and the X copies: check them against torch, so a
        # bug in the shared part cannot pass as "they agree".
        return x.double() @ self.w.double()

    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.launch(x)
        return self.y

    def launch(self, x: torch.Tensor) -> None:
        raise NotImplementedError

    def workload(self) -> Workload:
        # The bytes the work must move through device memory: X and Y once, W once. The
        # L2 → SM copies of W (1 GiB in the baseline, 1/2 or 1/4 of it with multicast) are
        # what the technique cuts, not work, so they are not counted.
        return Workload(bytes=4 * (ROWS * K + K * N + ROWS * N), flops=2 * ROWS * K * N,
                        flops_dtype="fp32")


class MulticastWeights(BulkWeightsBench):
    """Clusters of `cluster_size` CTAs: each multicasts its share of W to the whole cluster."""

    cluster_size = 2

    def launch(self, x: torch.Tensor) -> None:
        self.lib.launch_project_weights_multicast(x, self.w, self.y, ROWS, self.cluster_size)
