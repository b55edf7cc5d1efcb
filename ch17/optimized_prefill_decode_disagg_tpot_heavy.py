"""Optimized: overlapped KV hand-off on side streams, on the TPOT-heavy trace.

The optimized side of `prefill_decode_disagg` replaying `TPOTHeavy`'s trace:
short prompts, long answers. Goal: goodput.
"""
from __future__ import annotations

from ch17._prefill_decode_disagg_common import TPOTHeavy
from ch17.optimized_prefill_decode_disagg import OverlappedHandoff


class OverlappedHandoffTPOTHeavy(TPOTHeavy, OverlappedHandoff):
    pass


get_benchmark = OverlappedHandoffTPOTHeavy

if __name__ == "__main__":
    from core.single import main
    main(OverlappedHandoffTPOTHeavy)
