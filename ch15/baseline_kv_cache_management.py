"""Baseline: evict by dropping the KV, recompute it when the conversation returns.

What a serving loop does first, and vLLM's recompute preemption: when the KV budget is
full, the least recently used idle conversation's KV is simply freed. When that
conversation comes back, its context and new turn are prefilled together in one call
([1, C + U], 16384 + 64 tokens on the GPU), as vLLM re-prefills prompt and generated
tokens in one pass. Eviction costs nothing; every return costs a full-length prefill.
"""
import torch

from ch15._kv_cache_management_common import KVCacheBench, prefill_flops


class Recompute(KVCacheBench):
    description = ("multi-turn chat, 16k-token contexts, KV budget of 2: evicted KV dropped, "
                   "context + turn re-prefilled in one pass on return")

    def returning_turn(self, conv: int, tokens: torch.Tensor) -> torch.Tensor:
        if conv in self.budget:  # still resident: only the turn is new
            return self.continue_turn(conv, tokens[self.dims.context:])
        slot = self.admit(conv)  # the slot of the least recently used conversation
        return self.model.prefill(tokens[None], self.kv, self.slot_ids[slot:slot + 1])

    def return_flops(self) -> int:
        d = self.dims
        return d.conversations * prefill_flops(d.cfg, d.held)


get_benchmark = Recompute

if __name__ == "__main__":
    from core.single import main
    main(Recompute)
