"""Inputs for the cluster_dsmem pair: Y = X · W, X 131072 x 32, W 32 x 512 (64 KB), fp32.

Think of a rank-32 up-projection (the B matrix of a LoRA adapter) applied to 131072 tokens.
Each CTA takes 8 rows: 1 KB of X in, 16 KB of Y out, 131K multiply-adds, and it needs all
64 KB of W in shared memory. This is the regime the pair is about: a CTA's own slice is small
next to the tile every CTA shares (as with the operand tiles that neighbouring GEMM CTAs
share), so re-reading W dominates the traffic into the SMs: 16384 CTAs x 64 KB = 1 GiB from
L2 for 272 MiB of X and Y. (Where a CTA can loop over many slices instead, keeping W resident
in one persistent CTA amortizes it too; see the persistent pair.)

The baseline has every CTA load W itself. The optimized variants launch clusters of 2
(`cluster_dsmem`) or 4 (`cluster_dsmem_x4`) CTAs that split the load and read the rest from
each other's shared memory, cutting L2 → SM traffic for W by 2x or 4x; which size wins
depends on how the H100's SM-to-SM network compares with its L2 bandwidth.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Requirements, Tolerance, Workload
from core.cuda_pair import CudaPair

ROWS, K, N = 1 << 17, 32, 512


class SharedWeightsBench(CudaPair):
    source = "cluster_dsmem.cu"
    requires = Requirements(nvcc=True, min_compute_capability=(9, 0))  # thread-block clusters
    # Same W in shared memory, same tile function: bit-identical outputs.
    tolerance = Tolerance(rtol=0.0, atol=0.0)
    # fp32 against float64 torch, not bit for bit. Each output is a chain of K = 32 fmaf: the
    # rounding error is at most about K · 2^-24 · Σ|x_k w_k|; with x ~ N(0, 1), w ~ N(0, 1/K),
    # Σ|x_k w_k| averages 32 · 0.8 · 0.8/√32 ≈ 3.6, so ≈ 7e-6, a few times that in the tails.
    # 1e-4 leaves 5-10x of room, while one lost or stale term (|x_k w_k| ≈ 0.1 on average)
    # fails by three orders. (cluster_multicast shares this class.)
    reference_tolerance = Tolerance(rtol=1e-4, atol=1e-4)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.w = self.randn(K, N, gen=self.generator(ctx.seed)) / K ** 0.5  # the weights
        self.y = torch.full((ROWS, N), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(ROWS, K, gen=self.generator(seed))

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        # Both sides share the tile math (and the W each CTA assembles): check it against
        # torch, so a bug in the shared part cannot pass as "they agree".
        return x.double() @ self.w.double()

    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.launch(x)
        return self.y

    def launch(self, x: torch.Tensor) -> None:
        raise NotImplementedError

    def workload(self) -> Workload:
        return Workload(bytes=4 * (ROWS * K + K * N + ROWS * N), flops=2 * ROWS * K * N,
                        flops_dtype="fp32")


class ClusterWeights(SharedWeightsBench):
    """Clusters of `cluster_size` CTAs share W through distributed shared memory."""

    cluster_size = 2
    # Measured on an H100 (README): the L2 serves every CTA's re-read of a 64 KB read-only
    # tile faster than the SM-to-SM network plus two cluster barriers. Kept as the lesson.
    negative_result = ("DSMEM is slower than re-reading an L2-resident read-only tile here "
                       "(ch10/README.md, cluster_dsmem)")

    def launch(self, x: torch.Tensor) -> None:
        self.lib.launch_project_weights_cluster(x, self.w, self.y, ROWS, self.cluster_size)
