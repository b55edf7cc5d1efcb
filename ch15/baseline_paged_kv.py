"""Baseline: contiguous KV, every request reserving max_seq tokens.

The continuous-batching engine over a ContiguousKV of 9 slots x max_seq (72 MiB on the GPU):
8 sequences at a time, however short they are (one slot is the engine's scratch row).
"""
from ch15._paged_kv_common import ContiguousBudget


class ContiguousKVBudget(ContiguousBudget):
    cpu_bound = ("the engine's decode step is ~5 ms of Python launches for ~1 ms of GPU work on an "
                 "H100, so tokens per step (what paging buys) times the host's step rate is the speed")


get_benchmark = ContiguousKVBudget

if __name__ == "__main__":
    from core.single import main
    main(ContiguousKVBudget)
