"""Optimized: the system prompt's KV blocks are cached once and shared by reference.

setup() prefills the system prompt once into its own slot (the state an earlier request
left behind) and gives every request slot a block table that starts with the prompt's
blocks (`PrefixSharingKV.allocate_sharing`: same physical blocks, refcounted, no copy).
run() prefills only the user turns (`Decoder.prefill(..., start=2048)`): 16 x 128 tokens
through the model, attending over the shared blocks plus their own. The decoder's paged read
still gathers the shared blocks per request for SDPA (the `paged_attention` pair removes
that gather); the saving here is the 16 x 2048 tokens of prompt never recomputed.
"""
from __future__ import annotations

import torch

from ch16._prefix_cache_common import PrefixBench, PrefixSharingKV


class CachedPrefix(PrefixBench):
    def prepare(self) -> None:
        d = self.dims()
        dev = self.ctx.device
        own = -(-d["suffix"] // d["block"])
        blocks = d["prefix"] // d["block"] + d["requests"] * own + 1
        self.kv = PrefixSharingKV(d["cfg"], blocks, d["requests"] + 1, dev, block_size=d["block"])
        prefix_slot = self.kv.allocate(d["prefix"])
        with torch.no_grad():  # the cached prefix: computed once, as by an earlier request
            self.model.prefill(self.prefix[None], self.kv, torch.tensor([prefix_slot], device=dev))
        n_tok = d["prefix"] + d["suffix"]
        self.slots = torch.tensor([self.kv.allocate_sharing(prefix_slot, d["prefix"], n_tok)
                                   for _ in range(d["requests"])], device=dev)
        self.start = torch.full((d["requests"],), d["prefix"], device=dev)

    def tokens_through_model(self) -> int:
        d = self.dims()
        return d["requests"] * d["suffix"]

    @torch.no_grad()
    def run(self, suffix: torch.Tensor) -> torch.Tensor:
        return self.model.prefill(suffix, self.kv, self.slots, start=self.start)


get_benchmark = CachedPrefix

if __name__ == "__main__":
    from core.single import main
    main(CachedPrefix)
