"""The side of both attention pairs that runs our Triton kernel (`_attention_triton_kernel.py`).

Mixed in before the pair's own inputs class, which supplies make_inputs, the workload and the
tolerance; `causal` says which pass the pair times.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Requirements


class TritonFlashSide:
    causal = False
    requires = Requirements(modules=("triton",), min_compute_capability=(9, 0))  # TMA, wgmma

    def setup(self, ctx: BenchContext) -> None:
        from ch10._attention_triton_kernel import (  # lazy: needs triton
            DROPPED, attention_forward, attention_fwd_tuned)

        self.attention = attention_forward
        # compile and autotune on throwaway inputs of the real shape, outside the timing
        self.attention(*self.make_inputs(ctx.seed), causal=self.causal)
        self.best_config = str(attention_fwd_tuned.best_config)  # which won, for a debugger
        self.dropped_configs = dict(DROPPED)  # which the installed Triton could not compile

    def run(self, inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k, v = inputs
        return self.attention(q, k, v, causal=self.causal)
