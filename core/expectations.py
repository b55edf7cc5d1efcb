"""Stored speedups per GPU model (`chNN/expectations_<key>.json`) and the regression gate.

Gate: with stored speedup S and tolerance t (default 10%, per entry overridable) the floor
is S·(1−t), and never below 1.0 when S is below NEAR_ONE: a pair stored near or below 1x
cannot pass with an optimized side that is slower than its baseline. A run whose speedup
interval lies wholly below the floor is a regression; one whose median speedup is below the
floor but whose interval reaches it is inconclusive (a failure only under --strict);
otherwise it passes. No entry → "new". A pair declared a negative result (the optimized side
is slower here, and the README says why) is verified and reported, not gated. A variant whose
goal is memory is gated the same way on `memory_ratio` (baseline peak device memory over its
own), stored beside its speedup.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import atomic

SCHEMA = 1
DEFAULT_TOLERANCE = 0.10
# Pairs whose time is host CPU work (Benchmark.cpu_bound). Measured on the lent H100 VM (16
# vCPUs): a single-threaded zlib+NumPy decode loop varied 16% call to call (CV), and a stored
# 1.17x thread-pool speedup came back as 1.05x an hour later. 10% would fail them on noise.
CPU_BOUND_TOLERANCE = 0.25
NEAR_ONE = 1.10  # stored speedups below this get a floor of at least 1.0
# what the gate judges for each goal (Benchmark.goal): the speedup, or a ratio stored beside it
GATED_MEASURE = {"speed": "speedup", "memory": "memory_ratio", "compile_time": "compile_ratio",
                 "goodput": "goodput_ratio", "simulated_cost": "simulated_cost_ratio"}


class ExpectationsError(ValueError):
    """A malformed expectations file; it is never overwritten."""


@dataclass
class GateResult:
    status: str  # new | pass | regression | inconclusive | negative | teaching
    message: str
    stored_speedup: float | None = None
    floor: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message,
                "stored_speedup": self.stored_speedup, "floor": self.floor}


def pair_key(key: str, result: Any) -> str:
    """The expectations key of one pair's result (a PairResult): the GPU model, with the GPU
    count in front for multi-GPU pairs (`2x_h200`)."""
    ranks = getattr(result, "ranks", 1)
    return f"{ranks}x_{key}" if ranks > 1 else key


def path_for(chapter_dir: Path, key: str) -> Path:
    return chapter_dir / f"expectations_{key}.json"


def load(path: Path) -> dict[str, dict[str, Any]]:
    """Entries by example name; {} when the file does not exist."""
    if not path.exists():
        return {}
    fix = "fix it by hand or delete it and rerun with --update-expectations; it was left untouched"
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ExpectationsError(f"{path}: not valid JSON ({exc}); {fix}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("examples"), dict):
        raise ExpectationsError(f"{path}: expected an object with an 'examples' object; {fix}")
    for name, entry in data["examples"].items():
        speedup = entry.get("speedup") if isinstance(entry, dict) else None
        if not isinstance(speedup, (int, float)) or isinstance(speedup, bool) or speedup <= 0:
            raise ExpectationsError(f"{path}: entry '{name}' needs a positive number 'speedup'; {fix}")
        for goal, field in GATED_MEASURE.items():
            ratio = entry.get(field)
            if entry.get("goal") == goal and (not isinstance(ratio, (int, float)) or ratio <= 0):
                raise ExpectationsError(f"{path}: entry '{name}' has goal '{goal}' and needs a "
                                        f"positive number '{field}'; {fix}")
        tolerance = entry.get("tolerance", DEFAULT_TOLERANCE)
        if not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
            raise ExpectationsError(f"{path}: entry '{name}' has tolerance {tolerance!r}, "
                                    f"expected a fraction in [0, 1); {fix}")
    return data["examples"]


def floor_of(stored: float, tolerance: float) -> float:
    """The gate's floor for a stored ratio: stored·(1−tolerance), at least 1.0 near 1x."""
    floor = stored * (1 - tolerance)
    return max(floor, 1.0) if stored < NEAR_ONE else floor


def gate(entry: dict[str, Any] | None, speedup: float, interval: tuple[float, float],
         default_tolerance: float = DEFAULT_TOLERANCE, negative_result: str = "",
         measure: str = "speedup") -> GateResult:
    """The verdict on `speedup` (or, with measure="memory_ratio", on the memory saved)."""
    if negative_result:
        stored = float(entry[measure]) if entry and measure in entry else None
        return GateResult("negative", f"documented negative result, not gated: {negative_result}",
                          stored)
    if entry is None or measure not in entry:
        return GateResult("new", "no stored expectation" + (f" of {measure}" if entry else ""))
    stored = float(entry[measure])
    floor = floor_of(stored, float(entry.get("tolerance", default_tolerance)))
    lo, hi = interval
    what = {"memory_ratio": "memory saved ", "compile_ratio": "cold start ",
            "goodput_ratio": "goodput ", "simulated_cost_ratio": "simulated cost "}.get(measure, "")
    if hi < floor:
        return GateResult("regression", f"{what}{speedup:.2f}x (interval {lo:.2f}-{hi:.2f}) is "
                          f"below the floor {floor:.2f}x of stored {stored:.2f}x", stored, floor)
    if speedup < floor:
        return GateResult("inconclusive", f"{what}{speedup:.2f}x is below the floor {floor:.2f}x but "
                          f"its interval {lo:.2f}-{hi:.2f} reaches it; rerun", stored, floor)
    return GateResult("pass", f"{what}{speedup:.2f}x ≥ floor {floor:.2f}x (stored {stored:.2f}x)",
                      stored, floor)


def update(path: Path, hardware_key: str, entries: dict[str, dict[str, Any]]) -> None:
    """Merge `entries` into the file (other entries kept) and write it atomically."""
    examples = load(path)  # raises on a malformed file before anything is written
    for name, entry in entries.items():
        if "tolerance" in examples.get(name, {}) and "tolerance" not in entry:
            entry = {**entry, "tolerance": examples[name]["tolerance"]}  # a hand-set override
        examples[name] = entry
    document = {"schema": SCHEMA, "hardware_key": hardware_key, "examples": examples}
    atomic.write_text(path, json.dumps(document, indent=2, sort_keys=True) + "\n")


MIN_SAMPLES = 10  # fewer samples per side than this: no trustworthy interval
MAX_INTERVAL_RATIO = 1.10  # speedup interval hi / lo above this (about ±5%): too wide


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
