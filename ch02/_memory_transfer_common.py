"""Shared by the `memory_transfer` pair: one training batch, host memory → GPU.

The batch is 128 images of 3 × 224 × 224, normalized fp32 (73.5 MiB), as a CPU data pipeline
hands it to the training loop: in ordinary (pageable) host memory. Both sides end with the
same values in a device tensor of the batch's shape, and both move the batch's bytes across
the host link once, so the rate column is GB/s host → device against the measured pinned-copy
ceiling (`h2d_pinned_gbps`, core.hardware).
"""
from __future__ import annotations

import torch

from core.benchmark import Benchmark, Workload

BATCH_SHAPE = (128, 3, 224, 224)
BATCH_BYTES = 128 * 3 * 224 * 224 * 4


class TransferBench(Benchmark):
    def make_inputs(self, seed: int) -> torch.Tensor:
        # Drawn on the GPU (a CPU generator is far slower, and the harness builds fresh
        # inputs every round), then brought back into pageable host memory: that is where
        # each call's batch starts.
        return self.randn(*BATCH_SHAPE, gen=self.generator(seed)).cpu()

    def workload(self) -> Workload:
        return Workload(link_bytes=BATCH_BYTES, link="h2d")
