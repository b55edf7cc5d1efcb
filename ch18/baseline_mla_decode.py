"""Baseline: decompress the latent cache into per-head K and V every step, then SDPA.

One GEMM up-projects all T cached latents of every sequence through `w_ukv` into 16 heads
of [k_nope | v]; the shared rope key is broadcast onto each head and concatenated, giving
K [B, 16, T, 192] and V [B, 16, T, 128], and SDPA (its own backend choice; head dims 192
and 128 differ, so not FlashAttention) attends the step's query over them.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch18._mla_decode_common import MlaDecodeBench


class DecompressMla(MlaDecodeBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        s = self.shape()
        b, t = self.cache.shape[:2]
        q_nope, q_pe = self.project_query(x)
        q = torch.cat([q_nope, q_pe], dim=-1)[:, :, None]                       # [B, H, 1, 192]
        kv = (self.cache[..., :s.d_latent] @ self.w_ukv.flatten(1)).view(b, t, s.n_heads, -1)
        k_nope, v = kv.split([s.d_nope, s.d_v], dim=-1)                         # [B, T, H, *]
        k_pe = self.cache[..., None, s.d_latent:].expand(b, t, s.n_heads, s.d_rope)
        k = torch.cat([k_nope, k_pe], dim=-1)                                   # [B, T, H, 192]
        o = F.scaled_dot_product_attention(q, k.transpose(1, 2), v.transpose(1, 2), scale=s.scale)
        return o.reshape(b, -1) @ self.w_o


get_benchmark = DecompressMla

if __name__ == "__main__":
    from core.single import main
    main(DecompressMla)
