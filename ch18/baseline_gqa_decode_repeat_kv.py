"""Baseline (teaching): copy each KV head once per query head that uses it, then SDPA.

`repeat_interleave(group, dim=1)` turns K and V [B, 4, T, 128] into [B, 16, T, 128]
(head h of the copy is KV head h // 4, the GQA mapping), so a plain multi-head SDPA call
applies: Hugging Face's `repeat_kv`. The copies are written and read back every step, 9x
the bytes the attention needs; `gqa_decode` is the same step with each KV head read once.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch18._gqa_decode_common import GroupedDecodeBench


class RepeatKvThenSdpa(GroupedDecodeBench):
    teaching = True  # the book's mistake: the copy is the lesson, not a headline

    def run(self, q: torch.Tensor) -> torch.Tensor:
        group = self.shape().group
        k = self.k.repeat_interleave(group, dim=1)
        v = self.v.repeat_interleave(group, dim=1)
        return F.scaled_dot_product_attention(q, k, v)


get_benchmark = RepeatKvThenSdpa

if __name__ == "__main__":
    from core.single import main
    main(RepeatKvThenSdpa)
