"""Variant `performance_tf32`: the baseline's step with TF32 matmuls, nothing else changed.

Same fp32 model, same whole-batch step, same default AdamW; only the matmuls (the linear
layers forward and backward, and attention) run on the tensor cores in TF32 instead of as
fp32 FFMA on the CUDA cores. This isolates the share of the full `performance` gain that
precision of the matmul inputs alone buys.

`torch.backends.cuda.matmul.allow_tf32` (and cuDNN's) is process-wide and every side of
the pair runs in this process, so run() switches it on for its own step and restores the
previous values in a `finally` (`tf32_matmuls`); nothing is left on for the next side.

Precision change declared: TF32 keeps 10 of fp32's 23 mantissa bits in each matmul input
(the products are accumulated in fp32), so every per-token loss differs slightly from the
fp32 baseline's; see `tolerance`.
"""
from __future__ import annotations

import torch

from ch01._performance_common import LR, TrainingStep, tf32_matmuls
from core.benchmark import BenchContext, Tolerance


class Tf32Step(TrainingStep):
    # Per-token losses at init are ~ln(vocab) ≈ 9 with a spread of ~0.5 between tokens.
    # TF32 rounds each matmul input to 10 mantissa bits (unit roundoff 2^-11 ≈ 4.9e-4, 8×
    # finer than bf16's); over the model's matmuls that moves each per-token loss by up to
    # ~1.5e-4 relative (1.3e-3 absolute; median 2.4e-5) against the fp32 baseline, measured
    # on an H100 at the CUDA sizes and the same with TF32 emulated on a CPU. That is the
    # cost declared here: 2e-3 (a band of ~0.02 around a loss of 9) covers it ~15×, yet
    # other tokens put ~97% of the per-token losses outside it.
    tolerance = Tolerance(rtol=2e-3, atol=2e-3)

    def make_optimizer(self, ctx: BenchContext) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.model.parameters(), lr=LR)

    def run(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        with tf32_matmuls(True):  # on for this step only, restored in a finally
            return self.train_step(batch)


get_benchmark = Tf32Step

if __name__ == "__main__":
    from core.single import main
    main(Tf32Step)
