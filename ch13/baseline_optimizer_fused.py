"""Baseline: torch.optim.AdamW with torch's defaults, what a training script writes.

With neither `foreach` nor `fused` given, torch picks the foreach implementation when every
parameter is on a GPU: one multi-tensor `_foreach_*` kernel per operation of the update
(decay, two moment updates, bias corrections, sqrt, divide, update) for a whole list of
tensors. Few launches, but each operation is its own pass over memory, so every step reads
and writes the parameters and both moments several times. (On a CPU the default is the
per-parameter loop; the CPU run only checks that the sides agree.)
"""
from __future__ import annotations

import torch

from ch13._optimizer_common import LR, WEIGHT_DECAY, AdamWStep


class DefaultAdamW(AdamWStep):
    def optimizer(self, params: list[torch.Tensor]) -> torch.optim.Optimizer:
        return torch.optim.AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY)


get_benchmark = DefaultAdamW

if __name__ == "__main__":
    from core.single import main
    main(DefaultAdamW)
