"""Optimized variant `_pooled`: one pool of cache slots shared by every batch of requests.

A server does not size a cache per batch: it keeps one pool of slots, each able to hold
one request's K/V up to the maximum length, and lends them out. setup() allocates a pool of
twice the batch's slots; each run() takes `batch` contiguous slots from the free list
(first fit), decodes exactly as the preallocated side does inside them, and frees them.
Successive calls land on different slots (the free list rotates), which the answers must
not notice. Paged caches (vLLM) go one step further and lend fixed-size blocks of tokens
rather than whole slots, so requests of different lengths share the pool without waste;
ch15 covers that.
"""
from __future__ import annotations

import torch

from ch13._kv_cache_common import KvCacheDecode
from ch13.optimized_kv_cache import DECODE_LOOP_CPU_BOUND, decode_into
from core.benchmark import BenchContext


class SlotPool:
    """A free list of slot indices; `take(n)` hands out n adjacent free slots (first fit)."""

    def __init__(self, slots: int):
        self.free = list(range(slots))

    def take(self, n: int) -> int:
        free = sorted(self.free)
        for i in range(len(free) - n + 1):
            if free[i + n - 1] - free[i] == n - 1:  # n adjacent slots: the pool slice is a view
                for slot in free[i:i + n]:
                    self.free.remove(slot)
                return free[i]
        raise RuntimeError(f"no {n} adjacent free slots in the pool")

    def give_back(self, first: int, n: int) -> None:
        self.free.extend(range(first, first + n))


class PooledCache(KvCacheDecode):
    cpu_bound = DECODE_LOOP_CPU_BOUND

    def setup(self, ctx: BenchContext) -> None:
        c = self.cfg
        self.slots = 2 * c.batch
        shape = (self.slots, c.heads, c.max_len, c.head_dim)
        self.k_pool = torch.empty(shape, device=ctx.device, dtype=torch.bfloat16)
        self.v_pool = torch.empty_like(self.k_pool)
        self.pool = SlotPool(self.slots)
        self.calls = 0

    def run(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        n = self.cfg.batch
        # Another tenant holds the first `calls % (batch + 1)` slots, so this batch's
        # position in the pool moves from call to call.
        held = self.pool.take(self.calls % (n + 1)) if self.calls % (n + 1) else None
        first = self.pool.take(n)
        try:
            out = decode_into(self.k_pool[first:first + n], self.v_pool[first:first + n],
                              inputs, self.output_buffer(inputs))
        finally:
            self.pool.give_back(first, n)
            if held is not None:
                self.pool.give_back(held, self.calls % (n + 1))
            self.calls += 1
        return out


get_benchmark = PooledCache

if __name__ == "__main__":
    from core.single import main
    main(PooledCache)
