"""Shared by the `gqa_decode` pair: a decode step whose 16 query heads share 4 KV heads.

16 sequences with 8192 tokens of context each, ch15 SMALL attention (16 query heads, 4 KV
heads of 128, bf16): the cache of one layer is 256 MiB. Grouped-query attention stores a
quarter of the K/V that 16 full heads would, and a decode step is a read of that cache, so
the step should cost a quarter too: if each KV head is read once for its 4 query heads.

- baseline: `repeat_interleave` the KV heads up to 16 and call SDPA with equal head counts,
  the `repeat_kv` that Hugging Face's Llama attention applied before SDPA and what most
  ports of a GQA model write first. It writes a 4x copy of the cache (1 GiB) and reads it
  back, every step: about 9x the bytes the attention needs.
- optimized: the same SDPA call with `enable_gqa=True`: the kernel maps query head h to KV
  head h // 4 and reads the cache in place (FlashAttention packs the 4 query heads of a
  group into one tile's rows).

Both compute the same function at the same precision; see ch18.decode_attention for the
tolerance and the float64 reference. Expected: the gain approaches the byte ratio, since
both kernels are bound by memory. On the CPU (supports_cpu): 2 x 256 tokens, TINY heads, fp32.
"""
from __future__ import annotations

from ch15.decoder import SMALL, TINY
from ch18.decode_attention import DecodeAttentionBench, DecodeShape


class GroupedDecodeBench(DecodeAttentionBench):
    # A decode step runs inside a captured graph in every serving engine (ch16 piece_graphs);
    # timed eagerly, the optimized side's ~0.1 ms of GPU work measured the host's launches
    # (HOST-BOUND on the H100 and the H200), so both sides are timed by graph replay.
    timing_mode = "graph"
    CUDA_SHAPE = DecodeShape.of(SMALL, batch=16, kv_len=8192)
    CPU_SHAPE = DecodeShape.of(TINY, batch=2, kv_len=256)
