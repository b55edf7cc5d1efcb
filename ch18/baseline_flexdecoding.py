"""Baseline: SDPA over the 32k-token cache, one query token per sequence, GQA in the call.

`enable_gqa=True` lets each group of 4 query heads read its KV head in place (no copy); no
mask and no backend is forced, so SDPA picks its flash path on Hopper (FlashAttention-2,
which splits the KV axis for a one-token query, or cuDNN's: to be checked on the first GPU
run). See _flexdecoding_common for the regime.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch18._flexdecoding_common import LongContextDecodeBench


class SdpaDecode(LongContextDecodeBench):
    def run(self, q: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, self.k, self.v, enable_gqa=True)


get_benchmark = SdpaDecode

if __name__ == "__main__":
    from core.single import main
    main(SdpaDecode)
