"""The regression gate: a measured ratio against the one stored for this GPU model.

Gate: with stored ratio S and tolerance t (default 10%, per entry overridable) the floor is
S·(1−t), and never below 1.0 when S is below NEAR_ONE: a pair stored near or below 1x cannot
pass with an optimized side that is slower than its baseline. A run whose interval lies wholly
below the floor is a regression; one whose median is below the floor but whose interval
reaches it is inconclusive (a failure only under --strict); otherwise it passes. No entry →
"new". A declared negative result is verified and reported, not gated. Which ratio is gated
(the speedup, the memory saved, ...) is the variant's goal's (core.goals); how entries are
stored is core.expectations.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_TOLERANCE = 0.10
# Pairs whose time is host CPU work (Benchmark.cpu_bound). Measured on the lent H100 VM (16
# vCPUs): a single-threaded zlib+NumPy decode loop varied 16% call to call (CV), and a stored
# 1.17x thread-pool speedup came back as 1.05x an hour later. 10% would fail them on noise.
CPU_BOUND_TOLERANCE = 0.25
NEAR_ONE = 1.10  # stored ratios below this get a floor of at least 1.0
MIN_SAMPLES = 10  # fewer samples per side than this: no trustworthy interval
MAX_INTERVAL_RATIO = 1.10  # interval hi / lo above this (about ±5%): too wide to store

# Statuses that fail a run (exit 1): a regression, and a variant judged by other rules than
# the ones it is stored under (core.declarations).
FAILING = ("regression", "rules changed")


@dataclass
class GateResult:
    status: str  # new | pass | regression | inconclusive | negative | teaching | rules changed | smoke
    message: str
    stored_speedup: float | None = None  # the stored value of the gated ratio
    floor: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message,
                "stored_speedup": self.stored_speedup, "floor": self.floor}


def floor_of(stored: float, tolerance: float) -> float:
    """The gate's floor for a stored ratio: stored·(1−tolerance), at least 1.0 near 1x."""
    floor = stored * (1 - tolerance)
    return max(floor, 1.0) if stored < NEAR_ONE else floor


def gate(entry: dict[str, Any] | None, value: float, interval: tuple[float, float],
         default_tolerance: float = DEFAULT_TOLERANCE, negative_result: str = "",
         measure: str = "speedup", what: str = "") -> GateResult:
    """The verdict on `value`, the measured `measure` (a key of the stored entry); `what`
    names it in the message ("memory saved ")."""
    if negative_result:
        stored = float(entry[measure]) if entry and measure in entry else None
        return GateResult("negative", f"documented negative result, not gated: {negative_result}",
                          stored)
    if entry is None or measure not in entry:
        return GateResult("new", "no stored expectation" + (f" of {measure}" if entry else ""))
    stored = float(entry[measure])
    floor = floor_of(stored, float(entry.get("tolerance", default_tolerance)))
    lo, hi = interval
    if hi < floor:
        return GateResult("regression", f"{what}{value:.2f}x (interval {lo:.2f}-{hi:.2f}) is "
                          f"below the floor {floor:.2f}x of stored {stored:.2f}x", stored, floor)
    if value < floor:
        return GateResult("inconclusive", f"{what}{value:.2f}x is below the floor {floor:.2f}x but "
                          f"its interval {lo:.2f}-{hi:.2f} reaches it; rerun", stored, floor)
    return GateResult("pass", f"{what}{value:.2f}x ≥ floor {floor:.2f}x (stored {stored:.2f}x)",
                      stored, floor)


def noisy_reason(samples: tuple[int, int], interval: tuple[float, float], stop_reason: str,
                 tolerance: float = DEFAULT_TOLERANCE) -> str:
    """Why a measured speedup is too noisy to store (empty when it is fine to store).

    `samples`: (baseline, optimized) sample counts; `interval`: the speedup's 95% interval;
    `tolerance`: the gate's tolerance for this pair. The interval may span at most the
    tolerance (hi / lo ≤ 1 + tolerance, and never less than MAX_INTERVAL_RATIO): a stored
    value less certain than that would make the gate's floor a coin toss."""
    lo, hi = interval
    if min(samples) < MIN_SAMPLES:
        return f"only {min(samples)} samples (at least {MIN_SAMPLES} give an interval to trust)"
    limit = max(MAX_INTERVAL_RATIO, 1 + tolerance)
    if lo <= 0 or hi / lo > limit:
        capped = f" after the {stop_reason}" if "cap" in stop_reason else ""
        return (f"speedup interval {lo:.2f}-{hi:.2f} is wider than ±{(limit - 1) / 2:.0%}"
                f"{capped}; rerun on a quieter machine")
    return ""
