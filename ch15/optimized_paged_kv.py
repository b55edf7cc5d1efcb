"""Optimized: paged KV, the same bytes as 16-token blocks behind a block table.

Requests reserve the blocks their prompt + output need, so the same 72 MiB admits ~28
concurrent sequences instead of 8, and each decode step produces that many tokens (vLLM's
PagedAttention block manager at small scale).
"""
from ch15._paged_kv_common import PagedBudget

get_benchmark = PagedBudget

if __name__ == "__main__":
    from core.single import main
    main(PagedBudget)
