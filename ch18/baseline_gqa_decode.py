"""Baseline: fold each KV head's 4 query heads into the query axis, then SDPA.

The step's query [B, 16, 1, 128] is viewed (no copy) as [B, 4, 4, 128]: KV head j gets
query heads 4j..4j+3 as its 4 query rows, the GQA mapping h -> h // 4. SDPA then runs as
plain multi-head attention over the cache's 4 KV heads, reading each once; the output
[B, 4, 4, 128] is viewed back as [B, 16, 1, 128]. This is ch15's `cached_attention` layout
without its length mask (every sequence here has the same length).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch18._gqa_decode_common import GroupedDecodeBench


class FoldedQuerySdpa(GroupedDecodeBench):
    def run(self, q: torch.Tensor) -> torch.Tensor:
        b, h, _, d = q.shape
        hkv = self.k.shape[1]
        folded = q.view(b, hkv, h // hkv, d)                 # [B, Hkv, group, D]
        return F.scaled_dot_product_attention(folded, self.k, self.v).view(b, h, 1, d)


get_benchmark = FoldedQuerySdpa

if __name__ == "__main__":
    from core.single import main
    main(FoldedQuerySdpa)
