"""Per-stage gains from cumulative speedups (ch20's stage tables).

Cumulative stage variants each add one fix to the stage before and are all timed against
the same baseline in one run, so speedup_k = baseline time / stage k's time. Stage k's own
gain is speedup_k / speedup_{k-1} (stage 0 being the baseline, speedup 1): measured, not
estimated, and the gains multiply back to the last stage's speedup.
"""
from __future__ import annotations

import math


def stage_gains(speedups: list[float]) -> list[float]:
    """Cumulative speedups vs the baseline, stage 1 first -> each stage's own gain."""
    if not speedups:
        raise ValueError("stage_gains needs at least one stage's speedup")
    for s in speedups:
        if not (math.isfinite(s) and s > 0):
            raise ValueError(f"a speedup must be a positive finite number, got {s!r}")
    return [s / prev for prev, s in zip([1.0, *speedups[:-1]], speedups)]
