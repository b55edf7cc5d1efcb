"""Baseline: gather each sequence's KV blocks into contiguous tensors, then SDPA.

Exactly the decoder's paged read path (ch15): `PagedKV.read` indexes the pool with the
block table, copying every sequence's blocks, padded to the longest sequence, into
[B, max_len, kv_heads, D] K and V; `cached_attention` then runs SDPA over that copy with a
per-sequence length mask (GQA by folding the query heads that share a KV head into the
query axis, so K/V are not repeated). The copy is written once and read back once per step.
"""
from __future__ import annotations

import torch

from ch15.decoder import cached_attention
from ch16._paged_attention_common import PagedDecodeBench


class GatherThenSdpa(PagedDecodeBench):
    cpu_bound = ("the optimized side builds Flex's BlockMask from the block table on the host "
                 "every step: on an H100, 1.1 ms of host time per call against 0.8 ms on the GPU "
                 "(with one CTA per sequence; the split-KV kernel's GPU time is to be re-measured)")
    def run(self, q: torch.Tensor) -> torch.Tensor:
        k, v = self.kv.read(0, self.slots, self.max_len)                   # the gather
        visible = (torch.arange(self.max_len, device=q.device) < self.lengths[:, None])[:, None]
        return cached_attention(q[:, None], k, v, visible)[:, 0]           # [B, H, D]


get_benchmark = GatherThenSdpa

if __name__ == "__main__":
    from core.single import main
    main(GatherThenSdpa)
