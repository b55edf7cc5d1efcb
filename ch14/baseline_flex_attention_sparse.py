"""Baseline: SDPA with the sliding window as a dense boolean [S, S] mask.

What one writes without FlexAttention: build the mask once and pass it as `attn_mask`. An
arbitrary mask rules out the FlashAttention backend (it knows only `is_causal`); SDPA picks
a kernel that accepts a mask and computes all S x S scores of every head, then discards the
~88% the window excludes.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch14._flex_attention_sparse_common import S, WindowBench, dense_mask


class SdpaDenseMask(WindowBench):
    def prepare(self) -> None:
        self.mask = dense_mask(S, self.device)  # [S, S] bool, 64 MiB

    def run(self, qkv: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k, v = qkv
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)


get_benchmark = SdpaDenseMask

if __name__ == "__main__":
    from core.single import main
    main(SdpaDenseMask)
