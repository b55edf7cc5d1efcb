"""Optimized training step: bf16 autocast, the whole batch at once, fused AdamW.

Same tokens, same loss (the mean over the batch), same gradient in exact arithmetic.
- bf16 autocast runs the matmuls and attention on tensor cores at half the bytes per
  activation; the weights, the optimizer state and the loss stay fp32.
- Half-size activations let the whole batch go through as one micro-batch: 4x fewer,
  4x larger kernels, which keep the GPU busier than four small passes.
- AdamW(fused=True) updates every parameter in a few kernels instead of a chain of
  foreach kernels per step.

Precision change declared: bf16 rounds matmul inputs to 8 mantissa bits, so the loss
differs from the fp32 baseline's by a small relative amount; see `tolerance`.
"""
from __future__ import annotations

import torch

from ch01._performance_common import TrainingStep, token_losses
from core.benchmark import BenchContext, Tolerance


class Bf16FusedStep(TrainingStep):
    # Per-token losses at init are ~ln(vocab) ≈ 9 with a spread of ~0.5 between tokens;
    # bf16 autocast moves each by ~1e-3 relative (≤1.3e-3 measured with CPU autocast).
    # 2% leaves headroom for GPU kernels, yet different weights or targets put most
    # tokens outside it.
    tolerance = Tolerance(rtol=2e-2, atol=2e-2)

    def make_optimizer(self, ctx: BenchContext) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.model.parameters(), lr=3e-4, fused=ctx.is_cuda)

    def run(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        inputs, targets = batch
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=torch.device(self.device).type, dtype=torch.bfloat16):
            losses = token_losses(self.model, inputs, targets)
        loss = losses.mean()
        loss.backward()
        self.optimizer.step()
        return loss.detach(), losses.detach()


get_benchmark = Bf16FusedStep

if __name__ == "__main__":
    Bf16FusedStep.main()
