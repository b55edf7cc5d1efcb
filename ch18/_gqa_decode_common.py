"""Shared by the `gqa_decode` pairs: a decode step whose 16 query heads share 4 KV heads.

16 sequences with 8192 tokens of context each, ch15 SMALL attention (16 query heads, 4 KV
heads of 128, bf16): the cache of one layer is 256 MiB. Grouped-query attention stores a
quarter of the K/V that 16 full heads would, and a decode step is a read of that cache, so
the step should cost a quarter too: if each KV head is read once for its 4 query heads.

- `gqa_decode` (the headline), baseline: fold the 4 query heads that share a KV head into
  the query-length axis (q viewed as [B, 4, 4, 128], no copy) and call SDPA as plain
  multi-head attention over the 4 KV heads: the layout of ch15's `cached_attention` (here
  without its length mask: every sequence has the same length). Each KV byte is read once.
  optimized: the same SDPA call on the unfolded query with `enable_gqa=True`. For a
  one-token query FlashAttention-2 folds the group into the query rows itself (flash_api's
  `seqlenq_ngroups_swapped`), so both sides were expected to launch the same split-KV kernel
  over the same 256 MiB (byte ratio 1:1); an H100 measured 1.06x, both at 94% of the copy
  ceiling. The lesson: GQA's saving needs only that each KV head be read once, which either
  spelling gets.
- `gqa_decode_repeat_kv` (teaching), baseline: `repeat_interleave` the KV heads up to 16,
  then SDPA with equal head counts: the `repeat_kv` that Hugging Face's Llama attention
  applied before SDPA. It writes a 4x copy of the cache (1 GiB), reads it back and reads
  the cache itself: 2.25 GiB per step against the 0.25 GiB the attention needs, 9x the
  bytes. optimized: `enable_gqa=True`, as above. The copy is the book's mistake, so the
  pair is tagged `teaching`: its speedup is the lesson, not a headline.

All sides compute the same function at the same precision; see ch18.decode_attention for
the tolerance and the float64 reference. On the CPU (supports_cpu): 2 x 256 tokens, TINY
heads, fp32.
"""
from __future__ import annotations

from ch15.decoder import SMALL, TINY
from ch18.decode_attention import DecodeAttentionBench, DecodeShape


class GroupedDecodeBench(DecodeAttentionBench):
    # A decode step runs inside a captured graph in every serving engine (ch16 piece_graphs);
    # timed eagerly, enable_gqa's ~0.1 ms of GPU work measured the host's launches
    # (HOST-BOUND on the H100 and the H200), so every side is timed by graph replay.
    timing_mode = "graph"
    CUDA_SHAPE = DecodeShape.of(SMALL, batch=16, kv_len=8192)
    CPU_SHAPE = DecodeShape.of(TINY, batch=2, kv_len=256)
