"""Baseline: copy layer i's weights to the GPU, then compute layer i; one stream, in turn.

What an offloading loop looks like first: one device buffer per weight matrix, an
asynchronous copy from pinned memory (`non_blocking=True`, so the host does not wait), then
the layer. Copy and matmuls are queued on the same stream, so the GPU does them one after
the other: while the weights cross the host link the SMs idle, and while the SMs compute
the copy engine idles. Time per call ≈ Σ (copy_i + compute_i).
"""
from __future__ import annotations

import torch

from ch19._memory_double_buffering_common import OffloadedStackBench, mlp_layer


class CopyThenCompute(OffloadedStackBench):
    def prepare(self) -> None:
        self.w1, self.w2 = self.device_buffers()

    def run(self, x: torch.Tensor) -> torch.Tensor:
        for host_w1, host_w2 in zip(self.host_w1, self.host_w2):
            self.w1.copy_(host_w1, non_blocking=True)
            self.w2.copy_(host_w2, non_blocking=True)
            x = mlp_layer(x, self.w1, self.w2)
        return x


get_benchmark = CopyThenCompute

if __name__ == "__main__":
    from core.single import main
    main(CopyThenCompute)
