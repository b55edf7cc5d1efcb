"""Inputs for the attention pair: non-causal self-attention softmax(QKᵀ/√d)·V in bf16.

Batch 4, 16 heads, sequence 4096, head_dim 128: Q, K, V and the output are 64 MiB each, while
the eager baseline's score matrix is 4·16·4096·4096 bf16 values = 2 GiB (and its scaled copy
and softmax another 2 GiB each). Q, K and V are each call's inputs (make_inputs), the same
for both sides.

Tolerance: both outputs are bf16, but they round differently. The eager path rounds the
scores to bf16, rounds again after scaling and rounds the probabilities to bf16 before the
second matmul; flash keeps the scores and the online softmax in fp32 registers and rounds
only the unnormalized probabilities fed to its second matmul. A CPU emulation at this shape
(2-16 heads, seeds 0-2) put eager within 6e-3 absolute of an fp64 reference and flash within
6e-4; their difference never exceeded rtol 2e-2 + 2.1e-3. Outputs average ~0.02 in magnitude
(each is a mean over ~4096 values of V), so atol 1e-2 leaves ~3x margin while an output that
is zero or uses the wrong scale still fails.
"""
from __future__ import annotations

import torch

from core.benchmark import Benchmark, Requirements, Tolerance, Workload

B, H, S, D = 4, 16, 4096, 128


class AttentionBench(Benchmark):
    tolerance = Tolerance(rtol=2e-2, atol=1e-2)
    requires = Requirements(min_compute_capability=(8, 0))  # the flash kernels need sm_80+

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        gen = self.generator(seed)
        return tuple(self.randn(B, H, S, D, gen=gen, dtype=torch.bfloat16) for _ in range(3))

    def workload(self) -> Workload:
        # Two S x S x D matmuls per (batch, head); bytes: read Q, K, V and write O once.
        return Workload(flops=4.0 * B * H * S * S * D, flops_dtype="bf16",
                        bytes=4.0 * B * H * S * D * 2)
