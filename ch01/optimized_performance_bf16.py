"""Variant `performance_bf16`: the baseline's step under bf16 autocast, default AdamW.

Same whole-batch step and the same default (`foreach`, non-fused) AdamW as the baseline;
the forward runs under `torch.autocast(dtype=torch.bfloat16)`, so the matmuls and attention
(and their backward) run on the tensor cores in bf16 and activations take half the bytes.
The weights, their gradients, the optimizer state and the loss stay fp32. Against the
`performance_tf32` variant this shows what bf16 adds over TF32; against the full
`performance` variant, what the fused optimizer adds on top.

Precision change declared: bf16 rounds matmul inputs to 8 significant bits (7 stored), so
the losses differ from the fp32 baseline's by a small relative amount; see `tolerance`.
"""
from __future__ import annotations

import torch

from ch01._performance_common import LR, TrainingStep
from core.benchmark import BenchContext, Tolerance


class Bf16Step(TrainingStep):
    # Per-token losses at init are ~ln(vocab) ≈ 9 with a spread of ~0.5 between tokens;
    # bf16 autocast moves each by ~2e-3 relative (median 1.7e-3, at most 4.6e-3 or 0.042
    # absolute, measured on an H100 at the CUDA sizes; ≤1.7e-3 with CPU autocast). 2% (a
    # band of ~0.2 around a loss of 9) leaves ~5× headroom, yet different weights or
    # targets put ~75% of the tokens outside it.
    tolerance = Tolerance(rtol=2e-2, atol=2e-2)

    def make_optimizer(self, ctx: BenchContext) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.model.parameters(), lr=LR)  # defaults, as the baseline

    def run(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        return self.train_step(batch, autocast=torch.bfloat16)


get_benchmark = Bf16Step

if __name__ == "__main__":
    from core.single import main
    main(Bf16Step)
