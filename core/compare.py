"""Compare two runs pair by pair: did the optimized side get faster, slower, or neither?

The verdict is noise-aware: a bootstrap interval of new median / old median (optimized
side's raw samples). slower: the whole interval is above 1 + threshold; faster: below
1 − threshold; same: inside [1 − threshold, 1 + threshold]; otherwise inconclusive.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.stats import speedup_interval

DEFAULT_THRESHOLD = 0.05


def load_run(path: Path) -> dict[str, Any]:
    """A run directory or its results.json; ValueError with the path when unusable."""
    path = Path(path)
    file = path / "results.json" if path.is_dir() else path
    if not file.exists():
        raise ValueError(f"{path}: no results.json; pass a run directory of `bench run`")
    try:
        data = json.loads(file.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{file}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict) or "pairs" not in data:
        raise ValueError(f"{file}: not a results.json of `bench run` (no 'pairs')")
    return data


def _rows(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {ex["id"]: ex for pair in run["pairs"] for ex in pair["examples"]}


def verdict(old: list[float], new: list[float], threshold: float = DEFAULT_THRESHOLD
            ) -> tuple[str, tuple[float, float]]:
    # speedup_interval(a, b) bootstraps median(a)/median(b): here new time / old time
    lo, hi = speedup_interval(new, old)
    if lo > 1 + threshold:
        return "slower", (lo, hi)
    if hi < 1 - threshold:
        return "faster", (lo, hi)
    if lo >= 1 - threshold and hi <= 1 + threshold:
        return "same", (lo, hi)
    return "inconclusive", (lo, hi)


def compare_runs(old_run: dict[str, Any], new_run: dict[str, Any],
                 threshold: float = DEFAULT_THRESHOLD) -> list[dict[str, Any]]:
    old_rows, new_rows = _rows(old_run), _rows(new_run)
    results = []
    for example_id in sorted(set(old_rows) | set(new_rows)):
        old, new = old_rows.get(example_id), new_rows.get(example_id)
        row: dict[str, Any] = {"id": example_id}
        if old is None or new is None:
            row["verdict"] = "only in new run" if old is None else "only in old run"
        elif new["status"] != "ok" or "stats" not in new:
            row["verdict"] = "failed" if old.get("status") == "ok" else "not measured"
            row["reason"] = new.get("reason", "")
        elif old["status"] != "ok" or "stats" not in old:
            row["verdict"] = "not measured before"
        else:
            row["verdict"], row["ratio_ci"] = verdict(old["stats"]["samples"],
                                                      new["stats"]["samples"], threshold)
            row.update(old_ms=old["stats"]["median"], new_ms=new["stats"]["median"],
                       old_speedup=old["speedup"], new_speedup=new["speedup"])
        results.append(row)
    return results


def is_regression(row: dict[str, Any]) -> bool:
    return row["verdict"] in ("slower", "failed")
