"""Baseline (teaching): AdamW(foreach=False), the per-parameter loop.

torch.optim's single-tensor path updates one parameter at a time: for each of the 148
tensors it launches about a dozen small kernels (decay, two moment updates, bias
corrections, sqrt, divide, update), each reading and writing whole tensors. For the many
small tensors the GPU time is the launch; for the big ones, the extra passes over memory.

Nobody picks this on a GPU (torch's default there is the foreach path this pair's optimized
side runs), so the pair is the book's lesson on launch overhead, not a headline: the honest
comparison, default AdamW against the fused kernel, is `optimizer_fused`.
"""
from __future__ import annotations

import torch

from ch13._optimizer_common import LR, WEIGHT_DECAY, AdamWStep


class PerParameterAdamW(AdamWStep):
    teaching = True  # slower than torch's default on a GPU: its speedup is a lesson, not a headline
    # ~1,500 small kernels launched from Python for 148 tensors: the host sets the time.
    cpu_bound = "the per-parameter loop launches ~10 kernels per tensor from Python"

    def optimizer(self, params: list[torch.Tensor]) -> torch.optim.Optimizer:
        return torch.optim.AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY, foreach=False)


get_benchmark = PerParameterAdamW

if __name__ == "__main__":
    from core.single import main
    main(PerParameterAdamW)
