"""Baseline: blocking per-request KV hand-off, on the TPOT-heavy trace.

The sides of `prefill_decode_disagg` (ch17/_prefill_decode_disagg_common.py) replaying
`TPOTHeavy`'s trace: short prompts, long answers.
"""
from __future__ import annotations

from ch17._prefill_decode_disagg_common import TPOTHeavy
from ch17.baseline_prefill_decode_disagg import BlockingHandoff


class BlockingHandoffTPOTHeavy(TPOTHeavy, BlockingHandoff):
    pass


get_benchmark = BlockingHandoffTPOTHeavy

if __name__ == "__main__":
    from core.single import main
    main(BlockingHandoffTPOTHeavy)
