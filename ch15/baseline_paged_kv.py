"""Baseline: contiguous KV, every request reserving max_seq tokens.

The continuous-batching engine over a ContiguousKV of 9 slots x max_seq (72 MiB on the GPU):
8 sequences at a time, however short they are (one slot is the engine's scratch row).
"""
from ch15._paged_kv_common import ContiguousBudget

get_benchmark = ContiguousBudget

if __name__ == "__main__":
    ContiguousBudget.main()
