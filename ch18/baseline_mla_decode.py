"""Baseline: cache per-head K and V (decompressed as each token was written), then SDPA.

The engine behind this side up-projects a token's latent once, when it writes it, and
keeps 16 heads of K [192] (k_nope | shared rope key) and V [128] per token, as DeepSeek's
reference `naive` path and Hugging Face's DeepSeek attention do; setup() builds that cache
from the same latent. A step projects the query and calls SDPA over K [B, 16, T, 192] and
V [B, 16, T, 128] (head dims 192 and 128 differ: SDPA's memory-efficient kernel, not
FlashAttention). It reads 5120 values per token where the latent holds 576.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch18._mla_decode_common import MlaDecodeBench, decompress_kv


class CachedKvMla(MlaDecodeBench):
    def prepare(self) -> None:
        k, v = decompress_kv(self.cache, self.w_ukv, self.shape())       # [B, T, H, *]
        self.k_heads = k.transpose(1, 2).contiguous()                   # [B, H, T, 192]
        self.v_heads = v.transpose(1, 2).contiguous()                   # [B, H, T, 128]

    def run(self, x: torch.Tensor) -> torch.Tensor:
        s = self.shape()
        q_nope, q_pe = self.project_query(x)
        q = torch.cat([q_nope, q_pe], dim=-1)[:, :, None]              # [B, H, 1, 192]
        o = F.scaled_dot_product_attention(q, self.k_heads, self.v_heads, scale=s.scale)
        return o.reshape(x.shape[0], -1) @ self.w_o


get_benchmark = CachedKvMla

if __name__ == "__main__":
    from core.single import main
    main(CachedKvMla)
