"""Variant: paged KV + CUDA graphs, KV kept in bf16 (int8 left out, to attribute its share).

The same loop as the optimized side with a plain bf16 `PagedKV`: no copy per token, one graph
replay per step. The K/V values are the baseline's exactly; the outputs differ only where a
step's read length is rounded up to its graph's bucket (masked keys, a different SDPA
reduction), within the decode-step tolerance of ch12/ch16.
"""
from __future__ import annotations

from ch20._graphed_paged_decode import GraphedPagedDecode
from ch20._integrated_kv_cache_common import BF16_TOLERANCE


class PagedBf16Graphs(GraphedPagedDecode):
    int8_kv = False
    tolerance = BF16_TOLERANCE


get_benchmark = PagedBf16Graphs

if __name__ == "__main__":
    from core.single import main
    main(PagedBf16Graphs)
