"""Optimized: absorb W_UK into the query and W_UV into the output; attend over the latent.

setup() lays W_UK and W_UV out per head ([H, nope, 512] and [H, 512, v]) so the two
absorptions are batched matmuls over the 16 heads. Per step:
  q_lat = q_nope W_UK          [B, H, 512]  (per head; a few MFLOP per token)
  scores = [q_lat | q_pe] . cache^T / sqrt(192)   one [16 x 576] x [576 x T] matmul per sequence
  o_lat = softmax(scores) . c_kv                  [B, H, 512]
  out = (o_lat W_UV) W_O
The latent cache is read twice (scores, then values) and never expanded: 576 values per
token instead of the 16 x 320 of per-head K/V the baseline caches and reads. Softmax in
fp32, as DeepSeek's reference `absorb` path does.
"""
from __future__ import annotations

import torch

from ch18._mla_decode_common import MlaDecodeBench


class AbsorbedMla(MlaDecodeBench):
    def prepare(self) -> None:
        s = self.shape()
        w_uk, w_uv = self.w_ukv.split([s.d_nope, s.d_v], dim=-1)     # [512, H, nope], [512, H, v]
        self.w_uk_heads = w_uk.permute(1, 2, 0).contiguous()         # [H, nope, 512]
        self.w_uv_heads = w_uv.permute(1, 0, 2).contiguous()         # [H, 512, v]

    def run(self, x: torch.Tensor) -> torch.Tensor:
        s = self.shape()
        b = x.shape[0]
        q_nope, q_pe = self.project_query(x)
        q_lat = torch.bmm(q_nope.transpose(0, 1), self.w_uk_heads).transpose(0, 1)   # [B, H, 512]
        q = torch.cat([q_lat, q_pe], dim=-1) * s.scale                               # [B, H, 576]
        scores = torch.bmm(q, self.cache.transpose(1, 2))                            # [B, H, T]
        p = scores.softmax(dim=-1, dtype=torch.float32).to(x.dtype)
        o_lat = torch.bmm(p, self.cache[..., :s.d_latent])                           # [B, H, 512]
        o = torch.bmm(o_lat.transpose(0, 1), self.w_uv_heads).transpose(0, 1)        # [B, H, v]
        return o.reshape(b, -1) @ self.w_o


get_benchmark = AbsorbedMla

if __name__ == "__main__":
    from core.single import main
    main(AbsorbedMla)
