"""Shared by the `flexdecoding` pair: one decode step over a long (32k-token) KV cache.

8 sequences, each with 32768 tokens of context (uniform lengths), GQA 16 query / 4 KV heads
of 128 (ch15 SMALL), bf16: one layer's cache is 0.5 GiB, so the step is a read of the whole
cache and nothing else matters (memory-bound; ~1 FLOP per byte).

The problem a decode kernel must solve: a query of one token gives a prefill-style kernel
one row block per (sequence, head), 8 x 4 = 32 work items here (with the GQA group packed
into the row block) for a GPU of 132 SMs, each walking 32k keys alone. Flash-decoding splits
the KV axis as well: each CTA reduces one slice of the keys to a partial output plus its
log-sum-exp, and a second small kernel combines the slices, so every SM streams part of the
cache.

- baseline: `F.scaled_dot_product_attention(q, k, v, enable_gqa=True)`: what a competent
  engineer calls, letting SDPA pick its backend. On Hopper with equal lengths and no mask
  that is expected to be a flash kernel: FlashAttention-2, whose forward splits the KV axis
  for a short query (PyTorch's flash_api computes `num_splits` when there is no dropout), or
  cuDNN's, which SDPA chose on the H100 for ch16 flash_sdp (which one runs here has not
  been profiled). Either way the baseline is itself a hand-written flash kernel: the pair
  measures Flex's generated kernel against it, and a result near 1x (or below) is the
  honest outcome for this regime.
- optimized: FlexAttention (`torch.compile`d in setup, warm-up not timed), which for a query
  this short dispatches to its flex-decoding kernel (split-KV + combine, GQA in the kernel),
  given the BlockMask below.

Why a BlockMask although every key is visible (read in torch 2.13's
`_inductor/kernel/flex/templates/flex_decode.py.jinja`; the row-sized tile came with
pytorch#167935, late 2025): the decode kernel launches SPLIT_KV CTAs per (sequence, KV
head) and cuts the row's keys into SPLIT_KV tiles. With full blocks in the mask a tile is
KV_LEN / SPLIT_KV keys; with none, `kv_num_blocks * SPARSE_KV_BLOCK_SIZE / SPLIT_KV`.
Called with no block_mask, Flex builds its "empty" mask: ONE block of 2**30 tokens and no
full blocks, so a tile is 2**30 / SPLIT_KV keys: the first CTA of each row walks all 32768
keys and the other SPLIT_KV - 1 walk none. That was this pair's first call: 32 busy CTAs
(8 x 4) of 256 launched, on 132 SMs. `dense_block_mask` says the same "every key" as
kv_len / 128 full blocks: tiles are cut from the real length and no mask_mod runs. The
sweep (`python -m ch18.sweep_flexdecoding`, H100, 2026-11-28, torch 2.11) confirmed it: the
old call 1179.5 µs (15.2% of copy), the same with SPLIT_KV 1 (equal time: idle splits); the
full-block mask 218.5 µs (81.8%). Its CTA columns come from the kernel's tile arithmetic;
`ch18/ncu_flexdecoding.sh` (Nsight Compute) has not been run.

kernel_options: SPLIT_KV = 16. torch's defaults on Hopper are SPLIT_KV = 2 * (SMs // (B * Hkv)) = 8
here (256 CTAs of 2 warps), BLOCK_M = 16 (the GQA group of 4 rows, padded), BLOCK_N 64,
num_warps 2, num_stages 1 (torch 2.13's CUDA heuristic picks num_stages 3 for sm_90, then
its `else` of the sm_110 test overwrites that with 1). `python -m ch18.sweep_flexdecoding`
varies them one at a time on the GPU. On an H100 (2026-11-28, torch 2.11): the defaults
218.5 µs (82% of copy), SPLIT_KV 16 197.8 µs (90%), SPLIT_KV 32 200.7, BLOCK_N 128 202.1,
num_warps 4 212.3, num_stages 3 376.8, SDPA 194.2 µs (92%): 16 splits (512 CTAs, ~4 per SM)
hide the memory latency that 8 splits of 2 warps leave exposed.

Result, a declared parity (negative_result), not a gain: measured on 2026-11-28, 0.92x on an
H100 (Flex at 89% of the copy ceiling) and 0.81x on an H200 (78%).

Where Flex is expected to pay: once the step needs what SDPA's flash path cannot take: a
ragged batch (a length mask sends SDPA to a mask-capable kernel, or the engine pads), a
paged cache (ch16 `paged_attention`), sliding windows, ALiBi/softcapping score_mods. Those
are expressed in Flex's block mask / score_mod at the cost of this same kernel. This pair
isolates the kernel itself, on the one shape where SDPA is at its best.

On the CPU (supports_cpu): 2 sequences x 256 tokens, TINY heads (4 / 2 of 16), fp32, eager Flex.
"""
from __future__ import annotations

import torch

from ch15.decoder import SMALL, TINY
from ch18.decode_attention import DecodeAttentionBench, DecodeShape

KV_BLOCK = 128       # the mask's KV block: a multiple of every BLOCK_N the decode kernel tries
KERNEL_OPTIONS: dict = {"SPLIT_KV": 16}   # the sweep's best on an H100 (see above)


def dense_block_mask(kv_len: int, device: torch.device | str):
    """A BlockMask for one query row that sees all `kv_len` keys, as kv_len / KV_BLOCK full
    blocks (no partial block: the kernel evaluates no mask_mod). Shape (1, 1, 1, kv_len):
    one mask shared by every sequence and head (GQA needs the head dimension to be 1)."""
    from torch.nn.attention.flex_attention import BlockMask

    assert kv_len % KV_BLOCK == 0, f"kv_len {kv_len} is not a multiple of {KV_BLOCK}"
    n = kv_len // KV_BLOCK
    i32 = dict(dtype=torch.int32, device=device)
    return BlockMask.from_kv_blocks(
        kv_num_blocks=torch.zeros(1, 1, 1, **i32), kv_indices=torch.zeros(1, 1, 1, n, **i32),
        full_kv_num_blocks=torch.full((1, 1, 1), n, **i32),
        full_kv_indices=torch.arange(n, **i32).view(1, 1, 1, n),
        BLOCK_SIZE=(128, KV_BLOCK), seq_lengths=(1, kv_len))


class LongContextDecodeBench(DecodeAttentionBench):
    CUDA_SHAPE = DecodeShape.of(SMALL, batch=8, kv_len=32768)
    CPU_SHAPE = DecodeShape.of(TINY, batch=2, kv_len=256)
