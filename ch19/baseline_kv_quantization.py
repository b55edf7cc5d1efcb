"""Baseline: decode attention over a bf16 KV cache (2 bytes per cached value).

The cache every serving engine starts with: K and V in the model's precision. The step
writes its new token's K/V, then the split-KV decode kernel (_kv_quant_kernel.py, the same
one the int8 sides use) reads all 4096 tokens of all 32 sequences: 256 MiB per layer per
step, so the step is bound by HBM bandwidth, and the cache's size bounds the batch.
"""
from __future__ import annotations

from ch19._kv_quantization_common import KVCacheDecodeBench


class Bf16KVCache(KVCacheDecodeBench):
    quantized = False


get_benchmark = Bf16KVCache

if __name__ == "__main__":
    from core.single import main
    main(Bf16KVCache)
