"""Baseline training step: fp32 eager, the whole batch in one pass, AdamW with its defaults.

What a first training loop looks like: full fp32 matmuls (TF32 off, no autocast), one
forward and backward over the global batch, then `AdamW` as constructed by default (its
multi-tensor `foreach` path on a GPU). The batch is not split into micro-batches: a whole
fp32 step over 32 × 512 tokens of this model peaks under 4.5 GiB of GPU memory, far below
what a GPU holds, so gradient accumulation would only add launches.

TF32 is switched off inside run() on every call and restored after (`tf32_matmuls`): it is
already off for matmuls by default, and pinning it keeps a setting left by anything else in
this process from changing what the baseline computes.
"""
from __future__ import annotations

import torch

from ch01._performance_common import LR, TrainingStep, tf32_matmuls
from core.benchmark import BenchContext


class Fp32Step(TrainingStep):
    def make_optimizer(self, ctx: BenchContext) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.model.parameters(), lr=LR)

    def run(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        with tf32_matmuls(False):  # true fp32 math: FFMA on the CUDA cores
            return self.train_step(batch)


get_benchmark = Fp32Step

if __name__ == "__main__":
    from core.single import main
    main(Fp32Step)
