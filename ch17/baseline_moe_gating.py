"""Baseline: MoE gating in eager PyTorch, as it is usually written.

softmax over the router logits, top-k, renormalise the k weights, then a one-hot matrix of
the chosen experts and its cumulative sum to find each token's slot in its expert's buffer.
About ten kernels; the [tokens·k, experts] int64 one-hot is materialised and read back.
"""
from __future__ import annotations

import torch

from ch17._moe_gating_common import Gating, GatingBench, eager_gating


class EagerGating(GatingBench):
    def run(self, logits: torch.Tensor) -> Gating:
        return eager_gating(logits, self.top_k)


get_benchmark = EagerGating

if __name__ == "__main__":
    EagerGating.main()
