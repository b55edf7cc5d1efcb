"""Baseline: decode attention over a bf16 KV cache (2 bytes per cached value).

The cache every serving engine starts with: K and V in the model's precision. The step
writes its new token's K/V (two indexed copies), then `F.scaled_dot_product_attention`
(flash attention, each KV head's 4 query heads folded into the query axis) reads all 4096
tokens of all 32 sequences: 256 MiB per layer per step, so the step is bound by HBM
bandwidth, and the cache's size bounds the batch. The library call is the bar: it streams
a bf16 cache near the copy bandwidth (`python -m ch19.sweep_kv_decode` measures how near).
"""
from __future__ import annotations

from ch19._kv_quantization_common import KVCacheDecodeBench


class Bf16KVCache(KVCacheDecodeBench):
    quantized = False


get_benchmark = Bf16KVCache

if __name__ == "__main__":
    from core.single import main
    main(Bf16KVCache)
