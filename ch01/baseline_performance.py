"""Baseline training step: fp32 eager, the batch as 4 micro-batches of gradient accumulation.

What a first training loop looks like: full fp32 (no TF32, no autocast), a micro-batch
small enough that fp32 activations fit comfortably, and AdamW with its defaults.
"""
from __future__ import annotations

import torch

from ch01._performance_common import TrainingStep, token_losses
from core.benchmark import BenchContext


class Fp32AccumulatedStep(TrainingStep):
    def make_optimizer(self, ctx: BenchContext) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.model.parameters(), lr=3e-4)

    def run(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        inputs, targets = batch
        n = self.cfg.micro_batches
        self.optimizer.zero_grad(set_to_none=True)
        per_token = []
        for x, y in zip(inputs.chunk(n), targets.chunk(n)):
            losses = token_losses(self.model, x, y)
            # Equal-sized micro-batches: the sum of (mean / n) is the mean over the whole
            # batch, so the accumulated gradient is that of one step over the batch.
            (losses.mean() / n).backward()
            per_token.append(losses.detach())  # stays on the device: no host sync in the step
        self.optimizer.step()
        losses = torch.cat(per_token)
        return losses.mean(), losses


get_benchmark = Fp32AccumulatedStep

if __name__ == "__main__":
    Fp32AccumulatedStep.main()
