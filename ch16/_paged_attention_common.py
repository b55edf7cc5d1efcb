"""Shared by the `paged_attention` pair: one decode step's attention over a paged KV pool.

64 sequences of 1k-8k tokens (lengths drawn once from the weight seed, so the batch is
ragged as a serving batch is) hold their K/V in a `ch15.kv.PagedKV` pool of 64-token
blocks. The blocks were handed out while the sequences grew side by side (one block each,
round-robin), so each sequence's blocks are scattered through the pool, as they are in a
server. Attention geometry is the shared decoder's (ch15 SMALL): 16 query heads, 4 KV heads
(GQA), head_dim 128, bf16; one layer's pool is ~0.6 GB.

The pool, block table and lengths are the cache's state (setup); each call brings the
step's queries [B, 16, 128] and returns the attention output [B, 16, 128]. Both sides build
whatever per-step metadata they need (mask, block mask) inside run(), from the block table
and lengths, as an engine does each step.

- baseline: `PagedKV.read` gathers every sequence's blocks into contiguous [B, max_len, ...]
  K and V (padded to the longest sequence), then the decoder's `cached_attention` (SDPA with
  a length mask, GQA folded into the query axis). The gather writes and re-reads a padded copy
  of the batch's whole KV: ~1.1 GB of copy traffic on top of the 0.6 GB the attention needs.
- optimized: FlexAttention reads the pool in place. The pool [blocks, 64, kv_heads, D] is
  viewed (no copy) as one long KV sequence [1, kv_heads, blocks * 64, D]; a BlockMask whose
  kv_indices *are* each sequence's block-table row tells the kernel which 64-token blocks
  belong to which sequence, and a mask_mod cuts the last block at the sequence's length.
  This is vLLM's PagedAttention idea (the kernel follows the block table) expressed in Flex;
  FlashInfer's paged decode kernels and vLLM's FlashAttention backend do the same.

How the BlockMask lists the blocks decides how Flex's decode kernel splits the work (torch
2.13's `flex_decode.py.jinja`; see ch18 `_flexdecoding_common` for the same kernel). It
launches SPLIT_KV CTAs per (sequence, KV head) and cuts the row into SPLIT_KV tiles of
KV_LEN / SPLIT_KV keys when the mask has *full* blocks, where KV_LEN is the K tensor's
length: here the whole pool (~300k tokens), so one tile holds any sequence's 1k-8k keys and
one CTA per row walks the whole sequence whatever SPLIT_KV is. Without full blocks a tile is
the row's own `kv_num_blocks * 64 / SPLIT_KV` keys (pytorch#167935, late 2025; vLLM's Flex
backend lists blocks this way). So the mask lists every block of a sequence as partial
(`full_blocks=False`: the mask_mod, a few loads per key, runs on every block) and
KERNEL_OPTIONS asks for SPLIT_KV = 4 (torch's default, max(1, 2 * (SMs // (B * Hkv))), is 1:
64 x 4 = 256 rows already fill 132 SMs twice). The split is for the ragged batch: with one
CTA per row the longest sequence's CTA (8k keys) sets the step while the 1k rows idle;
with 4 each CTA walks at most 2k keys and 1024 CTAs keep more loads in flight. SPLIT_KV = 4
is chosen from the kernel's source: `python -m ch18.sweep_flexdecoding --paged`, which times
both layouts over SPLIT_KV on the GPU, has not been run yet. The pair with this layout
measured 1.34x on an H100 and 1.98x on an H200 (2026-11-28); it stays declared cpu_bound,
since the optimized side builds the BlockMask on the host every step.

Block size 64: Flex's decode kernel tiles KV in blocks no larger than the sparse block, and
64 rows keep its loads wide (vLLM's default is 16; PagedKV's too). Both sides use the same
pool, so the block size does not favour either.

Tolerance: the two kernels sum in different orders; outputs are attention-weighted averages
of N(0, 1) values, |out| < ~1: rtol = atol = 2e-2 (a few bf16 ulps).
On the CPU (supports_cpu): 4 sequences of 20-200 tokens, TINY-like heads, fp32, eager Flex.
"""
from __future__ import annotations

import inspect
from dataclasses import replace

import torch

from ch15.decoder import SMALL, TINY, DecoderConfig
from ch15.kv import PagedKV
from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

KERNEL_OPTIONS: dict = {"SPLIT_KV": 4}  # see the docstring; the ch18 sweep's --paged table checks it
CUDA_CFG = replace(SMALL, n_layers=1, max_seq=8192)
CUDA_SHAPE = dict(batch=64, min_len=1024, max_len=8192, block=64)
CPU_CFG = replace(TINY, n_layers=1, max_seq=256)
CPU_SHAPE = dict(batch=4, min_len=20, max_len=200, block=16)


def build_paged_pool(cfg: DecoderConfig, lengths: list[int], block: int, device: str,
                     gen: torch.Generator) -> tuple[PagedKV, torch.Tensor]:
    """A one-layer PagedKV holding `lengths` tokens per sequence, grown round-robin one
    block at a time (so blocks interleave), filled with N(0, 1) K/V. Returns (kv, slots)."""
    num_blocks = sum(-(-n // block) for n in lengths) + 1  # + the null block
    kv = PagedKV(cfg, num_blocks, len(lengths), device, block_size=block)
    slots = [kv.allocate(min(n, block)) for n in lengths]
    for r in range(1, max(-(-n // block) for n in lengths)):
        for slot, n in zip(slots, lengths):
            if n > r * block:
                kv.grow(slot, min(n, (r + 1) * block))
    for pool in (kv.k, kv.v):  # layer by layer keeps the fp32 temporary small
        for i in range(pool.shape[1]):
            pool[:, i] = torch.randn(pool[:, i].shape, generator=gen, device=device).to(pool.dtype)
    return kv, torch.tensor(slots, device=device)


def _from_kv_blocks_kwargs() -> dict:
    """Skip the q-side (backward) indices where this torch can: inference never uses them."""
    from torch.nn.attention.flex_attention import BlockMask

    params = inspect.signature(BlockMask.from_kv_blocks).parameters
    return {"compute_q_blocks": False} if "compute_q_blocks" in params else {}


class PagedBlockMask:
    """Builds, each step, the BlockMask that makes Flex read a paged pool through its table.

    kv_idx is an index into the flattened pool: `kv_idx // block` is a physical block,
    `kv_idx % block` the offset in it. Row b of the BlockMask lists sequence b's physical
    blocks (its block-table row). With `full_blocks=False` (the pair's layout) all of them
    are partial blocks: the kernel applies the mask_mod on each and cuts the row's own
    blocks into SPLIT_KV tiles. With `full_blocks=True` all but the last are full blocks (no
    mask_mod there) and the last is partial; the decode kernel then cuts tiles from the
    pool's length, so SPLIT_KV cannot spread a row (see the module docstring).

    The mask_mod is the exact mask over the whole pool (Flex's contract; eager Flex
    evaluates it everywhere): key kv_idx is visible to sequence b iff its block belongs to b
    (`owner`) and its logical position `logical * block + offset` is below b's length, the
    inverse map PyTorch's experimental PagedAttention keeps as `physical_to_logical`.
    `owner` / `logical` are rebuilt from the table on every call, in place, so one compiled
    kernel serves every step and no call depends on an earlier one.
    """

    def __init__(self, block: int, pool_blocks: int, batch: int, device: torch.device | str,
                 full_blocks: bool = False):
        self.block = block
        self.pool_blocks = pool_blocks
        self.full_blocks = full_blocks
        # one spare entry at the end takes the scatter of unused table columns
        self.owner = torch.full((pool_blocks + 1,), -1, dtype=torch.long, device=device)
        self.logical = torch.zeros(pool_blocks + 1, dtype=torch.long, device=device)
        self.lengths = torch.zeros(batch, dtype=torch.long, device=device)
        self.kwargs = _from_kv_blocks_kwargs()
        owner, logical, lengths = self.owner, self.logical, self.lengths

        def mask_mod(b, h, q_idx, kv_idx):
            blk = kv_idx // block
            return (owner[blk] == b) & (logical[blk] * block + kv_idx % block < lengths[b])

        self.mask_mod = mask_mod

    def __call__(self, table: torch.Tensor, lengths: torch.Tensor):
        from torch.nn.attention.flex_attention import BlockMask

        b, w = table.shape
        dev = table.device
        n_blocks = (lengths + self.block - 1) // self.block                   # [B] >= 1
        cols = torch.arange(w, device=dev).expand(b, w)
        rows = torch.arange(b, device=dev)[:, None].expand(b, w)
        used = torch.where(cols < n_blocks[:, None], table, self.pool_blocks).flatten()
        self.owner.fill_(-1).scatter_(0, used, rows.flatten())
        self.logical.scatter_(0, used, cols.flatten())
        self.owner[self.pool_blocks] = -1                                     # the spare entry
        self.lengths.copy_(lengths)
        table32 = table.to(torch.int32)
        shape = dict(BLOCK_SIZE=(128, self.block), mask_mod=self.mask_mod,
                     seq_lengths=(1, self.pool_blocks * self.block), **self.kwargs)
        if not self.full_blocks:  # every block partial: the row's own blocks are split
            return BlockMask.from_kv_blocks(n_blocks.to(torch.int32).view(b, 1, 1),
                                            table32.view(b, 1, 1, w), **shape)
        last = table32.gather(1, (n_blocks - 1)[:, None])                      # [B, 1]
        partial_idx = torch.nn.functional.pad(last, (0, w - 1)).view(b, 1, 1, w)
        partial_num = torch.ones(b, 1, 1, dtype=torch.int32, device=dev)
        full_num = (n_blocks - 1).to(torch.int32).view(b, 1, 1)
        return BlockMask.from_kv_blocks(partial_num, partial_idx, full_num, table32.view(b, 1, 1, w),
                                        **shape)


class PagedDecodeBench(Benchmark):
    supports_cpu = True
    tolerance = Tolerance(rtol=2e-2, atol=2e-2)

    def dims(self) -> tuple[DecoderConfig, dict]:
        return (CUDA_CFG, CUDA_SHAPE) if self.ctx.is_cuda else (CPU_CFG, CPU_SHAPE)

    def setup(self, ctx: BenchContext) -> None:
        cfg, shape = self.dims()
        host = torch.Generator().manual_seed(ctx.seed)
        self.lengths_list = torch.randint(shape["min_len"], shape["max_len"] + 1, (shape["batch"],),
                                          generator=host).tolist()
        self.kv, self.slots = build_paged_pool(cfg, self.lengths_list, shape["block"], ctx.device,
                                               self.generator(ctx.seed))
        self.lengths = torch.tensor(self.lengths_list, device=ctx.device)
        self.max_len = max(self.lengths_list)  # the scheduler knows lengths on the host
        self.prepare()

    def prepare(self) -> None:
        """Per-side setup (compiled kernel, warm-up); not timed."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        cfg, shape = self.dims()
        return self.randn(shape["batch"], cfg.n_heads, cfg.head_dim, gen=self.generator(seed),
                          dtype=cfg.dtype)

    def workload(self) -> Workload:
        cfg, shape = self.dims()
        item = torch.empty(0, dtype=cfg.dtype).element_size()
        tokens = sum(self.lengths_list)
        kv_bytes = 2 * tokens * cfg.n_kv_heads * cfg.head_dim * item
        qo_bytes = 2 * shape["batch"] * cfg.n_heads * cfg.head_dim * item
        return Workload(bytes=kv_bytes + qo_bytes, flops=4 * tokens * cfg.n_heads * cfg.head_dim,
                        flops_dtype="bf16" if self.ctx.is_cuda else "fp32",
                        units=shape["batch"], unit_name="sequences")
