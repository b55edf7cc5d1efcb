"""Baseline: prefill every request's full prompt, system prompt included.

What an engine without prefix caching does: 16 prompts of 2048 + 128 tokens, one batched
prefill (`Decoder.prefill`, causal flash SDPA), writing every token's K/V into the
requests' own blocks of a PagedKV. The shared system prompt's K/V are recomputed 16 times.
"""
from __future__ import annotations

import torch

from ch15.kv import PagedKV
from ch16._prefix_cache_common import PrefixBench


class RecomputePrefix(PrefixBench):
    def prepare(self) -> None:
        d = self.dims()
        n_tok = d["prefix"] + d["suffix"]
        blocks = d["requests"] * -(-n_tok // d["block"]) + 1
        self.kv = PagedKV(d["cfg"], blocks, d["requests"], self.ctx.device, block_size=d["block"])
        self.slots = torch.tensor([self.kv.allocate(n_tok) for _ in range(d["requests"])],
                                  device=self.ctx.device)

    def tokens_through_model(self) -> int:
        d = self.dims()
        return d["requests"] * (d["prefix"] + d["suffix"])

    @torch.no_grad()
    def run(self, suffix: torch.Tensor) -> torch.Tensor:
        tokens = torch.cat([self.prefix.expand(suffix.shape[0], -1), suffix], dim=1)
        return self.model.prefill(tokens, self.kv, self.slots)


get_benchmark = RecomputePrefix

if __name__ == "__main__":
    from core.single import main
    main(RecomputePrefix)
