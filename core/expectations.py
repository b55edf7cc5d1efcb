"""Stored results per GPU model (`chNN/expectations_<key>.json`): reading, checking, writing.

One entry per variant: its speedup and, for a variant gated on another goal, that goal's
ratio (core.goals), the declarations it was measured under (core.declarations), its rates,
samples and provenance. The verdict on a new measurement is core.gate's, by the variant's
goal. A malformed file is a clear error naming the file; it is never overwritten. Writes are
atomic, with sorted keys, so a change is a reviewable diff.
"""
from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout  # a dependency of torch

from core import atomic, goals

SCHEMA = 1
LOCK_TIMEOUT_S = 120.0  # a merge takes milliseconds; longer means a stuck process holds it


class ExpectationsError(ValueError):
    """A malformed expectations file; it is never overwritten."""


def pair_key(key: str, result: Any) -> str:
    """The expectations key of one pair's result (a PairResult): the GPU model, with the GPU
    count in front for multi-GPU pairs (`2x_h200`); for a pair gated on a modelled cost that
    names what the model depends on (every example's goal `simulated_cost` with one
    `simulated_key`), `sim_<that key>` on whatever GPU ran it: no GPU is in the number. A
    CPU run models the pair's CPU sizes, so its entries are `sim_<key>_cpu_sizes`."""
    examples = getattr(result, "examples", [])
    models = {goals.goal_of(ex.goal).model_key(ex) for ex in examples}
    if examples and len(models) == 1 and "" not in models:
        return models.pop() + ("_cpu_sizes" if key.startswith("cpu") else "")
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
        goal = goals.GOALS.get(entry.get("goal", goals.DEFAULT))
        if goal is None:
            raise ExpectationsError(f"{path}: entry '{name}' has goal {entry.get('goal')!r}, not "
                                    f"one of {', '.join(goals.NAMES)}; {fix}")
        ratio = entry.get(goal.field)
        if not isinstance(ratio, (int, float)) or ratio <= 0:
            raise ExpectationsError(f"{path}: entry '{name}' has goal '{goal.name}' and needs a "
                                    f"positive number '{goal.field}'; {fix}")
        if not isinstance(entry.get("declarations", {}), dict):
            raise ExpectationsError(f"{path}: entry '{name}' has 'declarations' that are not an "
                                    f"object; {fix}")
        tolerance = entry.get("tolerance", 0.0)
        if not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
            raise ExpectationsError(f"{path}: entry '{name}' has tolerance {tolerance!r}, "
                                    f"expected a fraction in [0, 1); {fix}")
    return data["examples"]


def write_lock(path: Path) -> FileLock:
    """The lock every writer of `path` takes: runs on other GPUs of one machine (two 2-GPU
    runs on a 4-GPU node) merge into the same chapter file. Kept in the temp directory so
    the chapter folder gets no lock files."""
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]
    return FileLock(Path(tempfile.gettempdir()) / f"aisp-expectations-{digest}.lock",
                    timeout=LOCK_TIMEOUT_S)


def update(path: Path, hardware_key: str, entries: dict[str, dict[str, Any]]) -> None:
    """Merge `entries` into the file (other entries kept) and write it atomically, under
    `write_lock` so a concurrent run's merge is never lost."""
    try:
        with write_lock(path):
            examples = load(path)  # raises on a malformed file before anything is written
            for name, entry in entries.items():
                if "tolerance" in examples.get(name, {}) and "tolerance" not in entry:
                    entry = {**entry, "tolerance": examples[name]["tolerance"]}  # a hand-set override
                examples[name] = entry
            document = {"schema": SCHEMA, "hardware_key": hardware_key, "examples": examples}
            atomic.write_text(path, json.dumps(document, indent=2, sort_keys=True) + "\n")
    except Timeout:
        raise ExpectationsError(f"{path}: another process has held its write lock for "
                                f"{LOCK_TIMEOUT_S:g} s (a lock ends with its process, so one is "
                                f"still running: let that bench run finish or stop it)") from None


def other_host(ex: Any, entry: dict[str, Any] | None,
               fingerprint: dict[str, Any]) -> str:
    """For a host-paced result (cpu_bound, a side host-bound, or a goal whose ratio the host
    paces: goodput from a real-time replay, a compiler's cold start), the host its entry was
    stored on when this run's differs (CPU model or usable cores); "" otherwise. Its ratio
    depends on the host as much as on the GPU model the entry is keyed by: ch15
    disaggregated_inference's trace was past both sides' knees on a 32-core host and between
    them on a 64-core one."""
    stored = (entry or {}).get("provenance") or {}
    replayed = goals.goal_of(ex.goal).host_paced and not ex.simulated
    if not (ex.cpu_bound or ex.host_bound or replayed) or not stored.get("cpu"):
        return ""
    here = (fingerprint.get("cpu"), fingerprint.get("cpu_cores"))
    there = (stored.get("cpu"), stored.get("cpu_cores", here[1]))
    if here == there:
        return ""
    return (f"stored on {there[0]} ({there[1]} cores), this run on {here[0]} ({here[1]} cores)")
