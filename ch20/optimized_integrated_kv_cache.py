"""Optimized: paged KV (ch15) + int8 KV with per-(token, head) scales (ch19) + a CUDA graph per
decode step (ch12, ch16).

No copy of the cache per token (blocks reserved up front, written in place); K and V stored
in int8 with a fp32 scale per token and KV head, 0.52x the bytes of bf16, dequantized as
attention reads them; each step one graph replay instead of ~250 launches. Expected: the
graphs buy most of the time at batch 32 (the eager step is launch-bound), int8 buys
capacity (twice the sequences in a fixed KV budget) and costs a quantize on write and a
dequantize on read; the `_bf16_kv` variant shows that cost. Precision change declared:
int8 KV (INT8_TOLERANCE says what it costs in log-probabilities).
"""
from __future__ import annotations

from ch20._graphed_paged_decode import GraphedPagedDecode
from ch20._integrated_kv_cache_common import INT8_TOLERANCE


class PagedInt8Graphs(GraphedPagedDecode):
    int8_kv = True
    tolerance = INT8_TOLERANCE


get_benchmark = PagedInt8Graphs

if __name__ == "__main__":
    from core.single import main
    main(PagedInt8Graphs)
