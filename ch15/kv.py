"""The KV cache behind `ch15.decoder.Decoder`, in the two layouts the inference pairs compare.

Attention at step t needs the keys and values of every earlier token of the sequence; the
cache keeps them so a decode step computes K/V for its one new token only. The decoder talks
to a cache through `KVCache`, so a pair can swap the layout without touching the model:

- `ContiguousKV`: each sequence owns a slot preallocated to `max_seq` tokens. Simple and
  fast to read, but a 50-token request holds as much memory as a 4096-token one.
- `PagedKV`: a pool of fixed-size blocks plus a per-sequence block table, handed out as a
  sequence grows (vLLM's PagedAttention / block manager does this at scale). Memory follows
  the tokens actually held, so more sequences fit in the same budget.

Both store exactly the K/V values the decoder writes and hand back the same values, in
the same order, for a sequence's valid prefix: logits are bit-identical across layouts.

Who tracks what: the engine (the scheduler) knows each sequence's length on the host and
reserves room with `allocate(n_tokens)` / `grow(slot, n_tokens)` before writing; the
decoder's `write`/`read` then run on the device with no host round trip.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ch15.decoder import DecoderConfig


class OutOfKVMemory(RuntimeError):
    """No free slot or block left for a request: the scheduler must wait, evict or preempt."""


class KVCache(ABC):
    """What the decoder needs from a KV cache.

    Shapes: `slots` [B] (int64, on the cache's device) names sequences; `positions` [B, T]
    the absolute position of each token written; `k`/`v` [B, T, kv_heads, head_dim].
    `read` returns [B, length, kv_heads, head_dim]; entries at or past a sequence's own
    length are unspecified (finite) and the decoder masks them out.
    """

    def __init__(self, cfg: DecoderConfig, max_seqs: int, device: torch.device | str,
                 dtype: torch.dtype | None):
        self.cfg = cfg
        self.max_seqs = max_seqs
        self.device = torch.device(device)
        self.dtype = dtype or cfg.dtype
        self._free_slots = list(range(max_seqs - 1, -1, -1))  # pop() hands out 0, 1, 2, ...

    # -- bookkeeping on the host (the scheduler's side) -------------------------------------
    def allocate(self, n_tokens: int) -> int:
        """Claim a sequence slot with room for `n_tokens` tokens; returns the slot id."""
        if not self._free_slots:
            raise OutOfKVMemory(f"all {self.max_seqs} sequence slots are in use")
        slot = self._free_slots[-1]
        try:
            self._reserve(slot, n_tokens)
        except Exception:
            self._release(slot)  # the slot stays free and holds nothing
            raise
        return self._free_slots.pop()

    def grow(self, slot: int, n_tokens: int) -> None:
        """Make sure `slot` can hold `n_tokens` tokens in total (a no-op when it already can)."""
        self._reserve(slot, n_tokens)

    def free(self, slot: int) -> None:
        """Release a finished sequence's slot (and its blocks)."""
        if not 0 <= slot < self.max_seqs or slot in self._free_slots:
            raise ValueError(f"slot {slot} is not allocated")
        self._release(slot)
        self._free_slots.append(slot)

    def _check_len(self, n_tokens: int) -> None:
        if n_tokens > self.cfg.max_seq:
            raise ValueError(f"{n_tokens} tokens exceed max_seq={self.cfg.max_seq}")

    @abstractmethod
    def _reserve(self, slot: int, n_tokens: int) -> None: ...

    @abstractmethod
    def _release(self, slot: int) -> None: ...

    # -- data path on the device (the decoder's side) ---------------------------------------
    @abstractmethod
    def write(self, layer: int, slots: torch.Tensor, positions: torch.Tensor,
              k: torch.Tensor, v: torch.Tensor) -> None:
        """Store K/V of tokens at (slots[b], positions[b, t]) for one layer."""

    @abstractmethod
    def read(self, layer: int, slots: torch.Tensor, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """K/V of positions [0, length) of each sequence in `slots`, as [B, length, kv_heads, head_dim]."""

    @property
    @abstractmethod
    def nbytes(self) -> int:
        """Device memory the cache holds (K and V, all layers)."""


class ContiguousKV(KVCache):
    """One slot per sequence, preallocated to max_seq: [layers, max_seqs, max_seq, kv_heads, head_dim]."""

    def __init__(self, cfg: DecoderConfig, max_seqs: int, device: torch.device | str = "cpu",
                 dtype: torch.dtype | None = None):
        super().__init__(cfg, max_seqs, device, dtype)
        shape = (cfg.n_layers, max_seqs, cfg.max_seq, cfg.n_kv_heads, cfg.head_dim)
        self.k = torch.zeros(shape, device=self.device, dtype=self.dtype)
        self.v = torch.zeros(shape, device=self.device, dtype=self.dtype)

    def _reserve(self, slot: int, n_tokens: int) -> None:
        self._check_len(n_tokens)  # the memory is already there

    def _release(self, slot: int) -> None:
        pass  # stale values stay; the next owner overwrites before it reads

    def write(self, layer, slots, positions, k, v):
        self.k[layer, slots[:, None], positions] = k.to(self.dtype)
        self.v[layer, slots[:, None], positions] = v.to(self.dtype)

    def read(self, layer, slots, length):
        return self.k[layer, slots, :length], self.v[layer, slots, :length]

    @property
    def nbytes(self) -> int:
        return 2 * self.k.numel() * self.k.element_size()


class PagedKV(KVCache):
    """A pool of `num_blocks` blocks of `block_size` tokens and a block table per sequence.

    Pool: [layers, num_blocks, block_size, kv_heads, head_dim] for K and for V. Block 0 is a
    null block that is never handed out: unused block-table entries point at it, so a write
    past a sequence's reservation (the padding of a ragged prefill) lands there harmlessly,
    and a read past a sequence's length gathers finite values the decoder masks out.
    The block table lives on the device ([max_seqs, max_seq / block_size], int64) so
    write/read index through it without a host round trip; the host keeps the free list.
    """

    def __init__(self, cfg: DecoderConfig, num_blocks: int, max_seqs: int,
                 device: torch.device | str = "cpu", block_size: int = 16,
                 dtype: torch.dtype | None = None):
        super().__init__(cfg, max_seqs, device, dtype)
        if num_blocks < 2:
            raise ValueError("PagedKV needs at least 2 blocks (block 0 is the null block)")
        self.block_size = block_size
        self.num_blocks = num_blocks
        shape = (cfg.n_layers, num_blocks, block_size, cfg.n_kv_heads, cfg.head_dim)
        self.k = torch.zeros(shape, device=self.device, dtype=self.dtype)
        self.v = torch.zeros(shape, device=self.device, dtype=self.dtype)
        self.max_blocks_per_seq = -(-cfg.max_seq // block_size)
        self.block_table = torch.zeros(max_seqs, self.max_blocks_per_seq, dtype=torch.long,
                                       device=self.device)
        self._free_blocks = list(range(num_blocks - 1, 0, -1))  # pop() hands out 1, 2, 3, ...
        self._blocks: dict[int, list[int]] = {}                 # slot -> its blocks, in order

    @property
    def num_free_blocks(self) -> int:
        return len(self._free_blocks)

    def blocks_of(self, slot: int) -> list[int]:
        """The physical blocks of a sequence, in token order (a copy)."""
        return list(self._blocks.get(slot, []))

    def _reserve(self, slot: int, n_tokens: int) -> None:
        self._check_len(n_tokens)
        held = self._blocks.setdefault(slot, [])
        need = -(-n_tokens // self.block_size) - len(held)
        if need <= 0:
            return
        if need > len(self._free_blocks):  # check before taking any: no partial allocation
            raise OutOfKVMemory(
                f"need {need} more KV blocks of {self.block_size} tokens for slot {slot}, "
                f"only {len(self._free_blocks)} of {self.num_blocks - 1} are free")
        new = [self._free_blocks.pop() for _ in range(need)]
        first = len(held)
        held.extend(new)
        self.block_table[slot, first:first + need] = torch.tensor(new, dtype=torch.long)

    def _release(self, slot: int) -> None:
        self._free_blocks.extend(reversed(self._blocks.pop(slot, [])))
        self.block_table[slot] = 0  # back to the null block

    def write(self, layer, slots, positions, k, v):
        blocks = self.block_table[slots[:, None], positions // self.block_size]  # [B, T]
        offsets = positions % self.block_size
        self.k[layer, blocks, offsets] = k.to(self.dtype)
        self.v[layer, blocks, offsets] = v.to(self.dtype)

    def read(self, layer, slots, length):
        # Gather the sequences' blocks into contiguous [B, length, ...] tensors; the
        # `paged_attention` pair (ch16) replaces this copy with attention through the table.
        n = -(-length // self.block_size)
        blocks = self.block_table[slots, :n]  # [B, n]
        b = slots.shape[0]
        k = self.k[layer, blocks].reshape(b, n * self.block_size, *self.k.shape[-2:])
        v = self.v[layer, blocks].reshape(b, n * self.block_size, *self.v.shape[-2:])
        return k[:, :length], v[:, :length]

    @property
    def nbytes(self) -> int:
        return 2 * self.k.numel() * self.k.element_size()
