"""Causal flash attention written here: the Triton Hopper kernel of `attention_triton`, causal.

`_attention_triton_kernel.py` with causal=True: per block of 128 query rows, the K/V tiles
wholly in its past stream through the TMA ring without mask arithmetic, the diagonal block
is masked in a second loop, the tiles to its right are never loaded, and the longest rows
are launched first. Software-pipelined builds only (the warp-specialized one is kept to the
non-causal pass). Same rounding as the flash kernels, so the pair's tolerance. Not measured
yet.
"""
from __future__ import annotations

import torch

from ch10._attention_long_context_common import LongContextAttentionBench
from core.benchmark import BenchContext, Requirements


class TritonCausalAttention(LongContextAttentionBench):
    requires = Requirements(modules=("triton",), min_compute_capability=(9, 0))  # TMA, wgmma

    def setup(self, ctx: BenchContext) -> None:
        from ch10._attention_triton_kernel import (  # lazy: needs triton
            DROPPED, attention_forward, attention_fwd_tuned)

        self.attention = attention_forward
        # compile and autotune on throwaway inputs of the real shape, outside the timing
        self.attention(*self.make_inputs(ctx.seed), causal=True)
        self.best_config = str(attention_fwd_tuned.best_config)  # which won, for a debugger
        self.dropped_configs = dict(DROPPED)  # which the installed Triton could not compile

    def run(self, inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k, v = inputs
        return self.attention(q, k, v, causal=True)


get_benchmark = TritonCausalAttention

if __name__ == "__main__":
    from core.single import main
    main(TritonCausalAttention)
