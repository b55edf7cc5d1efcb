"""Baseline: the KV cache grows with torch.cat, one token at a time.

`k = torch.cat([k, k_new], dim=2)` allocates a new cache one token longer and copies the
old one into it, so step t moves the whole cache (prompt + t tokens) through memory once
more than attention needs, and the allocator hands out a new ~150 MB block every step.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch13._kv_cache_common import KvCacheDecode


class CatCache(KvCacheDecode):
    def run(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        out = self.output_buffer(inputs)
        k, v = inputs["k_prompt"], inputs["v_prompt"]
        for t in range(self.cfg.steps):
            k = torch.cat([k, inputs["k"][t]], dim=2)  # copies the whole cache
            v = torch.cat([v, inputs["v"][t]], dim=2)
            out[t] = F.scaled_dot_product_attention(inputs["q"][t], k, v)
        return out


get_benchmark = CatCache

if __name__ == "__main__":
    from core.single import main
    main(CatCache)
