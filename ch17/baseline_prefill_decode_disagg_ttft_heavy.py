"""Baseline: blocking per-request KV hand-off, on the TTFT-heavy trace.

The sides of `prefill_decode_disagg` (ch17/_prefill_decode_disagg_common.py) replaying
`TTFTHeavy`'s trace: long prompts, short answers.
"""
from __future__ import annotations

from ch17._prefill_decode_disagg_common import TTFTHeavy
from ch17.baseline_prefill_decode_disagg import BlockingHandoff


class BlockingHandoffTTFTHeavy(TTFTHeavy, BlockingHandoff):
    pass


get_benchmark = BlockingHandoffTTFTHeavy

if __name__ == "__main__":
    from core.single import main
    main(BlockingHandoffTTFTHeavy)
