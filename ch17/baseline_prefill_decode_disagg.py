"""Baseline: disaggregated prefill/decode with a blocking, per-request KV hand-off.

After each prefill on GPU 0, the prompt's K/V are copied layer by layer to its decode row on
GPU 1 on the default streams, and the serving loop waits for the copy before it launches
anything else: the one thread that feeds both GPUs stalls for every hand-off, and, because a
cross-GPU copy is ordered after GPU 1's queued decode steps, for those steps too.
"""
from __future__ import annotations

from ch17._prefill_decode_disagg_common import HandoffBench, blocking_handoff


class BlockingHandoff(HandoffBench):
    # its host synchronize() "to be safe" after each copy is what the book warns about; a
    # plain cross-device copy_ is already ordered on the GPU (an audit, 2026-11-28)
    teaching = True
    goal = "speed"  # the baseline of a goodput pair: the harness replays it beside the optimized side
    transfer = staticmethod(blocking_handoff)


get_benchmark = BlockingHandoff

if __name__ == "__main__":
    from core.single import main
    main(BlockingHandoff)
