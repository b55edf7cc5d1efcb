"""Baseline: MoE gating in eager PyTorch, as it is usually written.

softmax over the router logits, top-k, renormalise the k weights, then a stable sort of the
chosen expert ids, per-expert counts and their prefix sum give each token's slot in its
expert's buffer (see `eager_gating` for why not the one-hot cumsum). About a dozen kernels,
each intermediate through memory.
"""
from __future__ import annotations

import torch

from ch17._moe_gating_common import Gating, GatingBench, eager_gating


class EagerGating(GatingBench):
    def run(self, logits: torch.Tensor) -> Gating:
        return eager_gating(logits, self.top_k)


get_benchmark = EagerGating

if __name__ == "__main__":
    from core.single import main
    main(EagerGating)
