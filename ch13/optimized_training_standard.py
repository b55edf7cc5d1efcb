"""Optimized: bf16 autocast + torch.compile + AdamW(fused=True).

The last stage replaces torch's default AdamW (on a GPU the foreach path: one
multi-tensor kernel per operation, each its own pass over parameters and moments) with the
fused AdamW kernel (a few launches for all tensors, one pass over each).
The `_amp` and `_amp_compile` variants attribute the gain stage by stage; this is all three.
Precision change declared: bf16 autocast (see optimized_training_standard_amp.py).
"""
from __future__ import annotations

from typing import Any

import torch

from ch13._training_common import BF16_TOLERANCE, LR, TrainingStep
from ch13.baseline_training_standard import CONFIG


class StandardStep(TrainingStep):
    cuda_config = CONFIG
    amp = True
    compiled = True
    tolerance = BF16_TOLERANCE
    cpu_bound = ("the compiled step's launches from Python take nearly as long as its GPU "
                 "work on an H100 (host 13-15 ms, GPU 15-17 ms per step)")

    def make_optimizer(self, params: Any) -> torch.optim.Optimizer:
        return torch.optim.AdamW(params, lr=LR, fused=True)


get_benchmark = StandardStep

if __name__ == "__main__":
    from core.single import main
    main(StandardStep)
