"""Baseline: SDPA with the ALiBi bias materialized once as a [1, H, S, S] bf16 tensor.

What an ALiBi model does without FlexAttention: build the bias once (here in setup(); it
depends only on the shape) and pass it as `attn_mask`. An additive float mask rules out the
FlashAttention backend; SDPA runs a kernel that accepts a bias (memory-efficient attention
or cuDNN) and reads the 512 MiB bias once per batch element: 2 GiB per call, on top of Q, K, V.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch14._flex_attention_common import AlibiBench, S, alibi_bias


class SdpaMaterializedBias(AlibiBench):
    def prepare(self) -> None:
        self.bias = alibi_bias(self.slopes, S).to(torch.bfloat16)[None]  # [1, H, S, S]

    def run(self, qkv: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k, v = qkv
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias)


get_benchmark = SdpaMaterializedBias

if __name__ == "__main__":
    from core.single import main
    main(SdpaMaterializedBias)
