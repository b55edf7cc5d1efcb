"""Stopping a gate run's timing once its verdict is known.

A gate run (`bench run` against stored expectations, not `--update-expectations`) asks one
question per variant: is the speedup still at or above its floor? Timing that goes on after
the answer is clear only narrows an interval nobody reads; for host-bound pairs whose
medians never settle to ±1% it runs to the time cap (ch20 multiple_unoptimized: 45 s of
timing for seven sides). NVBench's point applies: the stopping rule serves the question.

The rule: at a few fixed rounds (CHECK_ROUNDS, not every round: each look at an interval is
one more chance to stop on a lucky stretch), bootstrap every variant's speedup over the
rounds so far at 99% and stop when each interval lies wholly above its floor and is narrow
enough to be a result (its hi/lo within what a stored result may span, as
core.expectations.noisy_reason asks). A variant that is close to its floor, noisy, new
(nothing stored), declared negative or gated on another goal is never decided here, so its
pair keeps the ordinary stopping rule. A regression is never decided early either: it runs to
the ordinary stop, so its report has the full interval.
"""
from __future__ import annotations

from dataclasses import dataclass

from core.stats import speedup_interval

CHECK_ROUNDS = (10, 20, 40, 80)  # rounds at which the intervals are looked at
CONFIDENCE = 0.99  # the looked-at intervals (the reported one stays 95%: it is narrower)
RESAMPLES = 1000


@dataclass(frozen=True)
class Floor:
    """What one variant's interval must clear for the gate to pass."""

    floor: float  # stored speedup × (1 − tolerance): the gate's floor
    widest: float  # the widest interval (hi / lo) a result may have


def decided(round_index: int, samples: dict[str, list[float]], round_sizes: dict[str, list[int]],
            floors: dict[str, Floor]) -> str | None:
    """A stop reason when every variant in `floors` has cleared its floor, else None.

    `samples` and `round_sizes` are the timing loop's, keyed by side ("baseline" and the
    variants); a variant dropped from timing no longer needs deciding (it has failed)."""
    if round_index not in CHECK_ROUNDS or "baseline" not in samples:
        return None
    live = {name: floor for name, floor in floors.items() if name in samples}
    if not live:
        return None
    for name, floor in live.items():
        lo, hi = speedup_interval(samples["baseline"], samples[name], resamples=RESAMPLES,
                                  confidence=CONFIDENCE,
                                  rounds=(round_sizes["baseline"], round_sizes[name]))
        if lo < floor.floor or lo <= 0 or hi / lo > floor.widest:
            return None
    return (f"decided at round {round_index}: every speedup's {CONFIDENCE:.0%} interval is above "
            f"its stored floor")


# Goals measured in a few whole rounds (goodput replays, compile-time cold starts) are gated
# on a median of a fixed count of them. Once more than half are in, the rounds still to come
# can move that median only within known bounds: when even its lowest value clears the floor,
# the verdict is known and the rest are not run (in a gate run only, as above).

def median_bounds(known: list[float], total: int) -> tuple[float, float] | None:
    """The lowest and highest value the median of `total` values (odd) can still take, given
    the `known` ones; None while too few are known to bound it on both sides."""
    needed = total // 2 + 1  # the median is the needed-th smallest (and the needed-th largest)
    if total % 2 == 0 or len(known) < needed:
        return None
    ordered = sorted(known)
    spare = len(known) - needed  # how many of the known may fall below (or above) the median
    return ordered[spare], ordered[len(known) - 1 - spare]


def rounds_decided(intervals: dict[str, tuple[float, float]], floors: dict[str, Floor]) -> str | None:
    """A stop reason when every variant in `floors` has an interval (the lowest and highest
    its gated ratio can still reach) wholly above its floor and narrow enough to be a result."""
    if not floors or any(name not in intervals for name in floors):
        return None
    for name, floor in floors.items():
        lo, hi = intervals[name]
        if lo < floor.floor or lo <= 0 or hi / lo > floor.widest:
            return None
    return "decided: whatever the remaining rounds give, every gated ratio stays above its floor"
