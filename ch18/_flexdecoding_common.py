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
  cuDNN's, which SDPA chose on the H100 for ch16 flash_sdp. Which one runs is to be checked
  with the profiler on the first GPU run. Either way the baseline is itself a hand-written
  flash kernel: the pair measures Flex's generated kernel against it, and a result near 1x
  (or below) is the expected, honest outcome for this regime.
- optimized: FlexAttention (`torch.compile`d in setup, warm-up not timed), which for a query
  this short dispatches to its flex-decoding kernel (split-KV + combine, GQA in the kernel).

Where Flex is expected to pay: once the step needs what SDPA's flash path cannot take: a
ragged batch (a length mask sends SDPA to a mask-capable kernel, or the engine pads), a
paged cache (ch16 `paged_attention`), sliding windows, ALiBi/softcapping score_mods. Those
are expressed in Flex's block mask / score_mod at the cost of this same kernel. This pair
isolates the kernel itself, on the one shape where SDPA is at its best.

On the CPU (supports_cpu): 2 sequences x 256 tokens, TINY heads (4 / 2 of 16), fp32, eager Flex.
"""
from __future__ import annotations

from ch15.decoder import SMALL, TINY
from ch18.decode_attention import DecodeAttentionBench, DecodeShape


class LongContextDecodeBench(DecodeAttentionBench):
    CUDA_SHAPE = DecodeShape.of(SMALL, batch=8, kv_len=32768)
    CPU_SHAPE = DecodeShape.of(TINY, batch=2, kv_len=256)
