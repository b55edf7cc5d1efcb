"""Shared by the `prefix_cache` pair: 16 requests that share a 2048-token system prompt.

Each request is the same system prompt (drawn once from the weight seed: the deployment's
prompt) followed by its own 128-token user turn (the call's input, drawn from the input
seed). The output is each request's next-token logits [16, 32000] from the shared decoder
(ch15 SMALL, bf16), i.e. the prefill that decides time-to-first-token.

- baseline: an engine without prefix caching prefills the 16 full prompts (2176 tokens
  each) in one batch: the system prompt's K/V are recomputed for every request, 16 x 2048
  tokens through every layer, 94% of the batch's tokens.
- optimized: the prompt's K/V were computed once, by an earlier request, and stay in the
  paged cache (setup() prefills it into its own blocks: this is the state a server keeps,
  not an answer to any call). Every request's block table *references* the prompt's 128
  blocks (shared by reference, refcounted; nothing is copied), followed by blocks of its
  own. run() prefills only the 16 x 128 user tokens at positions 2048..2175, attending over
  the shared blocks. vLLM's automatic prefix caching (hash of each full block) and SGLang's
  RadixAttention (a radix tree over token ids) find the shared blocks at scale; here the
  sharing is set up directly.

Both sides overwrite the same cache positions on every call (the user turn's K/V; the
baseline also the prompt's), so nothing carries over between calls.

Tolerance: the cached prompt K/V were computed in a [1, 2048] batch and the baseline's in a
[16, 2176] batch (other GEMM tiles, other bf16 roundings), and the baseline's attention is
causal flash while the optimized reads the cache through a masked SDPA: the logits
(|logits| < ~5) differ by bf16 roundings carried through four layers: rtol = 2e-2,
atol = 8e-2. On the CPU (supports_cpu): TINY, 4 requests, 64-token prompt, 16-token turns,
fp32, where the two agree to ~1e-6.
"""
from __future__ import annotations

import torch

from ch15.decoder import SMALL, TINY, Decoder, DecoderConfig
from ch15.kv import PagedKV
from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

CUDA_DIMS = dict(cfg=SMALL, requests=16, prefix=2048, suffix=128, block=16)
CPU_DIMS = dict(cfg=TINY, requests=4, prefix=64, suffix=16, block=16)


class PrefixSharingKV(PagedKV):
    """PagedKV whose sequences can start with another sequence's blocks, shared by reference.

    `allocate_sharing(src, n_shared, n_tokens)` makes a new sequence whose first
    n_shared tokens (a multiple of the block size) are `src`'s blocks: the same physical
    blocks appear in both block tables, each shared block counts its extra holders, and a
    block returns to the free list only when its last holder frees it. The sharer must not
    write into shared blocks (copy-on-write is the engine's job; here sequences write only
    past the shared prefix)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._extra_refs: dict[int, int] = {}
        self._share_next: list[int] | None = None

    def allocate_sharing(self, src_slot: int, n_shared: int, n_tokens: int) -> int:
        if n_shared % self.block_size:
            raise ValueError(f"a shared prefix must be whole blocks ({self.block_size} tokens)")
        blocks = self.blocks_of(src_slot)[: n_shared // self.block_size]
        if len(blocks) * self.block_size != n_shared:
            raise ValueError(f"slot {src_slot} holds fewer than {n_shared} tokens")
        self._share_next = blocks
        try:
            return self.allocate(n_tokens)
        finally:
            self._share_next = None

    def refcount(self, block: int) -> int:
        """How many sequences hold `block` (0: free)."""
        return sum(block in held for held in self._blocks.values())

    def _reserve(self, slot: int, n_tokens: int) -> None:
        if self._share_next is not None and not self._blocks.get(slot):
            shared = list(self._share_next)
            self._blocks[slot] = shared
            for b in shared:
                self._extra_refs[b] = self._extra_refs.get(b, 0) + 1
            self.block_table[slot, :len(shared)] = torch.tensor(shared, dtype=torch.long)
        super()._reserve(slot, n_tokens)

    def _release(self, slot: int) -> None:
        blocks = self._blocks.get(slot, [])
        keep = []
        for b in blocks:  # shared blocks stay with their other holders
            if self._extra_refs.get(b, 0):
                self._extra_refs[b] -= 1
                if not self._extra_refs[b]:
                    del self._extra_refs[b]
            else:
                keep.append(b)
        self._blocks[slot] = keep
        super()._release(slot)


class PrefixBench(Benchmark):
    supports_cpu = True
    tolerance = Tolerance(rtol=2e-2, atol=8e-2)

    def dims(self) -> dict:
        return CUDA_DIMS if self.ctx.is_cuda else CPU_DIMS

    @property
    def cfg(self) -> DecoderConfig:
        return self.dims()["cfg"]

    def setup(self, ctx: BenchContext) -> None:
        d = self.dims()
        self.model = Decoder(d["cfg"], seed=ctx.seed, device=ctx.device)
        gen = torch.Generator(device=ctx.device).manual_seed(ctx.seed + 1)
        self.prefix = torch.randint(0, d["cfg"].vocab, (d["prefix"],), generator=gen, device=ctx.device)
        self.prepare()

    def prepare(self) -> None:
        """Per-side cache set-up; not timed."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        d = self.dims()
        return torch.randint(0, d["cfg"].vocab, (d["requests"], d["suffix"]),
                             generator=self.generator(seed), device=self.device)

    def tokens_through_model(self) -> int:
        raise NotImplementedError

    def workload(self) -> Workload:
        d = self.dims()
        cfg = d["cfg"]
        tokens = self.tokens_through_model()
        # matmul FLOPs of the tokens this side runs (attention FLOPs left out); weights once
        return Workload(bytes=cfg.params() * 2, flops=2 * tokens * (cfg.params() - cfg.vocab * cfg.d_model),
                        flops_dtype="bf16" if self.ctx.is_cuda else "fp32",
                        units=d["requests"], unit_name="requests")
