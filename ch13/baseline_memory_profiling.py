"""Baseline (memory): a bf16 training step that keeps every activation for backward.

A modern eager step (bf16 autocast, fused AdamW) of a 12-block GPT (d 1024, 170M
parameters) on 8 sequences of 2048 tokens. Autograd saves each block's intermediates
(LayerNorm outputs, QKV, attention output and its logsumexp, the 4x-wide MLP activations)
from forward until backward uses them: ~0.5 GB per block here, most of the step's peak.
The allocator's history (torch.cuda.memory._record_memory_history, then _dump_snapshot; see
README) shows the sawtooth: memory climbs through forward and falls through backward.
"""
from __future__ import annotations

from typing import Any

import torch

from ch13._training_common import LR, Config, TrainingStep
from core.benchmark import Tolerance

CONFIG = Config(vocab=16384, d_model=1024, heads=16, layers=12, seq=2048, batch=8)


class KeepActivations(TrainingStep):
    cuda_config = CONFIG
    amp = True
    # Both sides run the same bf16 kernels; recomputation repeats the forward exactly, so
    # they agree to the bit on the forward and to fp32 summation order on the gradients.
    tolerance = Tolerance(rtol=1e-2, atol=1e-2)

    def make_optimizer(self, params: Any) -> torch.optim.Optimizer:
        return torch.optim.AdamW(params, lr=LR, fused=self.ctx.is_cuda)


get_benchmark = KeepActivations

if __name__ == "__main__":
    KeepActivations.main()
