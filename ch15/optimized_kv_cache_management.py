"""Optimized: KV written through to pinned host memory, prefetched back on a side stream.

Write-through: as soon as a turn's KV is on the GPU, a side stream copies it to this
conversation's pinned host buffer (device -> host, non_blocking), overlapped with the next
conversation's prefill. Eviction then frees the slot without waiting for anything but that
copy (SGLang's HiCache offers this as its `write_through` write policy). On return, the
context's KV is copied back host -> device on the same side stream, one conversation ahead
(conversation i+1's copy runs while conversation i's turn is prefilled), and only the turn
is prefilled: [1, U] with start = C. All of it is timed: backups, restores and waits.

Ordering, all with events and wait_stream (no host sync):
- the side stream waits for the current stream before each copy (the KV to save was just
  written; a slot to overwrite may still be read by the compute queued before);
- the current stream waits for an evicted conversation's backup before its slot is reused,
  and for a restore (its event) before the returning turn reads the KV;
- run() joins the side stream before it returns, so the harness's events see every copy.
Every copy is between tensors allocated once in setup() (the cache and the host buffers),
so the caching allocator never hands out memory a pending copy still uses (no
record_stream needed). On the CPU there are no streams: the same copies run in order.
"""
import torch

from ch15._kv_cache_management_common import KVCacheBench, copy_slot, prefill_flops
from core.benchmark import BenchContext


class OffloadPrefetch(KVCacheBench):
    description = ("multi-turn chat, 16k-token contexts, KV budget of 2: KV written through to "
                   "pinned host, prefetched back on a side stream, turn prefilled alone")

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        d, cfg = self.dims, self.dims.cfg
        shape = (d.conversations, cfg.n_layers, d.held, cfg.n_kv_heads, cfg.head_dim)
        # pinned: asynchronous DMA at full PCIe speed (pageable memory is staged and blocks)
        self.host_k = torch.empty(shape, dtype=cfg.dtype, pin_memory=ctx.is_cuda)
        self.host_v = torch.empty(shape, dtype=cfg.dtype, pin_memory=ctx.is_cuda)
        self.side = torch.cuda.Stream() if ctx.is_cuda else None
        if self.side is not None:
            self.saved = [torch.cuda.Event() for _ in range(d.conversations)]
            self.ready = [torch.cuda.Event() for _ in range(d.conversations)]

    def copy(self, conv: int, slot: int, start: int, end: int, to_host: bool) -> None:
        copy_slot(self.kv, slot, self.host_k[conv], self.host_v[conv], start, end, to_host)

    def written(self, conv: int, slot: int, start: int, end: int) -> None:
        if self.side is None:
            return self.copy(conv, slot, start, end, to_host=True)
        self.side.wait_stream(torch.cuda.current_stream())  # the turn's KV is written
        with torch.cuda.stream(self.side):
            self.copy(conv, slot, start, end, to_host=True)
        self.saved[conv].record(self.side)

    def dropped(self, conv: int) -> None:
        if self.side is not None:  # the slot is reused once its backup has left
            torch.cuda.current_stream().wait_event(self.saved[conv])

    def restore(self, conv: int, slot: int) -> None:
        if self.side is None:
            return self.copy(conv, slot, 0, self.dims.context, to_host=False)
        self.side.wait_stream(torch.cuda.current_stream())  # the slot's old owner is done with it
        with torch.cuda.stream(self.side):
            self.copy(conv, slot, 0, self.dims.context, to_host=False)
        self.ready[conv].record(self.side)

    def ahead(self, conv: int) -> None:
        for nxt in (conv, conv + 1):  # this conversation (if missing) and the next one
            if nxt < self.dims.conversations and nxt not in self.budget:
                self.restore(nxt, self.admit(nxt, busy=(conv,)))

    def returning_turn(self, conv: int, tokens: torch.Tensor) -> torch.Tensor:
        if self.side is not None:
            torch.cuda.current_stream().wait_event(self.ready[conv])
        return self.continue_turn(conv, tokens[self.dims.context:])

    def finish(self) -> None:
        if self.side is not None:  # the last backups: joined before run() returns
            torch.cuda.current_stream().wait_stream(self.side)

    def return_flops(self) -> int:
        d = self.dims
        return d.conversations * prefill_flops(d.cfg, d.turn, start=d.context)


get_benchmark = OffloadPrefetch

if __name__ == "__main__":
    from core.single import main
    main(OffloadPrefetch)
