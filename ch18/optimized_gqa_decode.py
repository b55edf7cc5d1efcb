"""Optimized: SDPA with `enable_gqa=True` reads the 4 KV heads in place.

The kernel is told that query heads come in groups of 4 per KV head; each KV byte is read
once per step and nothing is copied. For a one-token query FlashAttention-2 folds the group
into the query rows itself, so this is the baseline's kernel reached by a flag: a tie.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch18._gqa_decode_common import GroupedDecodeBench


class SdpaEnableGqa(GroupedDecodeBench):
    negative_result = ("a tie by construction: for a one-token query FlashAttention-2 folds "
                       "the GQA group into the query rows itself (seqlenq_ngroups_swapped), so "
                       "the folded-query baseline and enable_gqa launch the same kernel over "
                       "the same bytes; the copy GQA must avoid is gqa_decode_repeat_kv's lesson")

    def run(self, q: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, self.k, self.v, enable_gqa=True)


get_benchmark = SdpaEnableGqa

if __name__ == "__main__":
    from core.single import main
    main(SdpaEnableGqa)
