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
cluster: L2 serves W once per cluster. On an H100 and an H200 that is slower (README.md): a declared
negative result.
"""
from __future__ import annotations

import torch

from ch10._cluster_dsmem_common import ROWS, SharedWeightsBench

__all__ = ["ROWS", "BulkWeightsBench", "MulticastWeights"]


class BulkWeightsBench(SharedWeightsBench):
    """cluster_dsmem's workload, inputs, reference and tolerances; the kernels of
    cluster_multicast.cu (cp.async.bulk and clusters need sm_90; the multicast form is built
    for sm_90a, which core.cuda targets on Hopper). The workload counts X and Y once and W
    once: the L2 → SM copies of W (1 GiB in the baseline, 1/2 or 1/4 of it with multicast)
    are what the technique cuts, not work, so they are not counted."""

    source = "cluster_multicast.cu"


class MulticastWeights(BulkWeightsBench):
    """Clusters of `cluster_size` CTAs: each multicasts its share of W to the whole cluster."""

    cluster_size = 2
    # Measured on an H100 and an H200 (README): slower than every CTA bulk-copying W itself.
    # Kept as the lesson, as cluster_dsmem is.
    negative_result = ("multicasting W across a cluster is slower than each CTA's own bulk copy "
                       "of an L2-resident 64 KB tile here: 0.83x (x4: 0.77-0.78x) on an H100 "
                       "and an H200 (ch10/README.md, cluster_multicast)")

    def launch(self, x: torch.Tensor) -> None:
        self.lib.launch_project_weights_multicast(x, self.w, self.y, ROWS, self.cluster_size)
