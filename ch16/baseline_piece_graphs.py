"""Baseline: the decoder's decode step, launched eagerly (`Decoder.decode`).

~250 kernels at batch 20 (four layers of norms, RoPE, fused QKV and MLP matmuls, KV cache
index writes and gathers, SDPA), each a few µs of GPU work; PyTorch's host-side cost per op
is about as long, so the GPU waits on Python between kernels.
"""
from __future__ import annotations

import torch

from ch16._piece_graphs_common import DecodeStepBench


class EagerDecodeStep(DecodeStepBench):
    cpu_bound = "the eager step's ~250 kernel launches from Python set its time"

    def run(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.eager_step(tokens, self.slots, self.positions)


get_benchmark = EagerDecodeStep

if __name__ == "__main__":
    from core.single import main
    main(EagerDecodeStep)
