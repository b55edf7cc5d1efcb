"""Baseline: evict by dropping the KV, recompute it when the conversation returns.

What a serving loop does first, and vLLM's default preemption mode: when the KV budget is
full, the least recently used idle conversation's KV is simply freed. When that
conversation comes back, its context is prefilled again from its tokens ([1, 4096] on the
GPU, the same call its first turn made, so the KV is bit-identical), then the new turn
proceeds. Eviction costs nothing; every return costs a full context prefill.
"""
import torch

from ch15._kv_cache_management_common import KVCacheBench


class Recompute(KVCacheBench):
    description = ("multi-turn chat, KV budget of 3 contexts: evicted KV dropped, context "
                   "re-prefilled on return")

    def bring_back(self, conv: int, slot: int, context: torch.Tensor) -> None:
        self.prefill_context(context, slot)  # logits discarded: only the KV is wanted

    def context_prefills(self) -> int:
        return 2 * self.dims.conversations  # first turn + recompute on return


get_benchmark = Recompute

if __name__ == "__main__":
    Recompute.main()
