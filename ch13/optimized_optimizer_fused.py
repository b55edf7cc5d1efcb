"""Optimized: AdamW(fused=True), one fused kernel per group of tensors.

The fused implementation reads each parameter, gradient and both moments once and writes
the parameter and moments once, for many tensors per launch (a multi-tensor-apply kernel):
~7 fp32 passes over memory for the whole update where the default foreach path makes one
pass per operation. Same math in fp32; see the tolerance in _optimizer_common.py. (On a CPU
`fused=True` runs the CPU fused kernel.)
"""
from __future__ import annotations

import torch

from ch13._optimizer_common import LR, WEIGHT_DECAY, AdamWStep


class FusedAdamW(AdamWStep):
    def optimizer(self, params: list[torch.Tensor]) -> torch.optim.Optimizer:
        return torch.optim.AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY, fused=True)


get_benchmark = FusedAdamW

if __name__ == "__main__":
    from core.single import main
    main(FusedAdamW)
