"""Optimized: overlapped KV hand-off on side streams, on the TTFT-heavy trace.

The optimized side of `prefill_decode_disagg` replaying `TTFTHeavy`'s trace:
long prompts, short answers. Goal: goodput.
"""
from __future__ import annotations

from ch17._prefill_decode_disagg_common import TTFTHeavy
from ch17.optimized_prefill_decode_disagg import OverlappedHandoff


class OverlappedHandoffTTFTHeavy(TTFTHeavy, OverlappedHandoff):
    pass


get_benchmark = OverlappedHandoffTTFTHeavy

if __name__ == "__main__":
    from core.single import main
    main(OverlappedHandoffTTFTHeavy)
