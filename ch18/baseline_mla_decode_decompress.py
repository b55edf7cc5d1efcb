"""Baseline (teaching): decompress the latent cache into per-head K and V every step, then SDPA.

The cache holds only the 576-wide latent (MLA's memory saving) but the attention is the
standard one, so every step one GEMM up-projects all T cached latents of every sequence
through `w_ukv` into 16 heads of [k_nope | v], the shared rope key is concatenated onto
each head, giving K [B, 16, T, 192] and V [B, 16, T, 128], and SDPA attends the step's
query over them: T x the up-projection work of `mla_decode`'s sides, and ~3.6 GiB of
traffic per step.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch18._mla_decode_common import MlaDecodeBench, decompress_kv


class DecompressMla(MlaDecodeBench):
    teaching = True  # the book's mistake: re-deriving K/V from the latent each step

    def run(self, x: torch.Tensor) -> torch.Tensor:
        s = self.shape()
        q_nope, q_pe = self.project_query(x)
        q = torch.cat([q_nope, q_pe], dim=-1)[:, :, None]                       # [B, H, 1, 192]
        k, v = decompress_kv(self.cache, self.w_ukv, s)                         # [B, T, H, *]
        o = F.scaled_dot_product_attention(q, k.transpose(1, 2), v.transpose(1, 2), scale=s.scale)
        return o.reshape(x.shape[0], -1) @ self.w_o


get_benchmark = DecompressMla

if __name__ == "__main__":
    from core.single import main
    main(DecompressMla)
