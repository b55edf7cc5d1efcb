"""Compare two runs pair by pair: did the optimized side get faster, slower, or neither?

The verdict is noise-aware: a bootstrap interval of new median / old median (optimized
side's raw samples). slower: the whole interval is above 1 + threshold; faster: below
1 − threshold; same: inside [1 − threshold, 1 + threshold]; otherwise inconclusive.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.record import ExampleResult, RunRecord
from core.stats import speedup_interval

DEFAULT_THRESHOLD = 0.05


@dataclass
class CompareRow:
    """One example id's verdict; the numbers are set only where both runs measured it."""

    id: str
    verdict: str  # slower | faster | same | inconclusive | failed | not measured |
    #               not measured before | only in new run | only in old run
    reason: str = ""  # why the new run did not measure it
    ratio_ci: tuple[float, float] | None = None  # interval of new time / old time
    old_ms: float | None = None
    new_ms: float | None = None
    old_speedup: float | None = None
    new_speedup: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "verdict": self.verdict}
        if self.reason:
            out["reason"] = self.reason
        if self.ratio_ci is not None:
            out["ratio_ci"] = list(self.ratio_ci)
        for key in ("old_ms", "new_ms", "old_speedup", "new_speedup"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


def _lift_untyped(data: dict[str, Any]) -> None:
    """results.json written before the typed record kept an example's optimized timing at
    its top level ("stats", "workload", "rates"); move it under "timing" where it is now."""
    for pair in data.get("pairs") or []:
        for ex in (pair.get("examples") or []) if isinstance(pair, dict) else []:
            if isinstance(ex, dict) and "timing" not in ex and isinstance(ex.get("stats"), dict):
                ex["timing"] = {"stats": ex["stats"], "workload": ex.get("workload") or {},
                                "rates": ex.get("rates")}


def saved_runs(runs_dir: Path) -> list[Path]:
    """The finished runs in `runs_dir` (directories holding results.json), oldest first: run
    directories are named by their start time (YYYYMMDD-HHMMSS, a suffix when two share it)."""
    if not Path(runs_dir).is_dir():
        return []
    return sorted(p for p in Path(runs_dir).iterdir() if (p / "results.json").is_file())


def pick_runs(given: list[Path], runs_dir: Path) -> tuple[Path, Path]:
    """The two runs `bench compare` compares: both as given; one given against the latest
    saved run; none, the last two saved runs. A name that is not a path is a run id in
    `runs_dir` (`20261127-234511`). ValueError says what is missing."""
    resolved = [path if Path(path).exists() or not (Path(runs_dir) / path).exists()
                else Path(runs_dir) / path for path in given]
    if len(resolved) == 2:
        return resolved[0], resolved[1]
    saved = [run for run in saved_runs(runs_dir)
             if not resolved or run.resolve() != Path(resolved[0]).resolve()]
    needed = 2 - len(resolved)
    if len(saved) < needed:
        raise ValueError(f"{runs_dir}: {len(saved)} saved run{'s' if len(saved) != 1 else ''} "
                         f"to compare with, {needed} needed; pass the run directories, or "
                         f"--runs-dir where `bench run` wrote them")
    if resolved:
        return resolved[0], saved[-1]
    return saved[-2], saved[-1]


def load_run(path: Path) -> RunRecord:
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
    _lift_untyped(data)
    try:
        return RunRecord.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{file}: not a results.json of `bench run` "
                         f"({type(exc).__name__}: {exc})") from exc


def _rows(run: RunRecord) -> dict[str, ExampleResult]:
    return {ex.id: ex for ex in run.rows}


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


def _timed(ex: ExampleResult) -> bool:
    return ex.status == "ok" and ex.timing is not None and bool(ex.timing.stats.samples)


def compare_runs(old_run: RunRecord, new_run: RunRecord,
                 threshold: float = DEFAULT_THRESHOLD) -> list[CompareRow]:
    old_rows, new_rows = _rows(old_run), _rows(new_run)
    results = []
    for example_id in sorted(set(old_rows) | set(new_rows)):
        old, new = old_rows.get(example_id), new_rows.get(example_id)
        if old is None or new is None:
            row = CompareRow(example_id, "only in new run" if old is None else "only in old run")
        elif not _timed(new):
            row = CompareRow(example_id, "failed" if old.status == "ok" else "not measured",
                             reason=new.reason)
        elif not _timed(old):
            row = CompareRow(example_id, "not measured before")
        else:
            verdict_, ratio_ci = verdict(old.timing.stats.samples, new.timing.stats.samples,
                                         threshold)
            row = CompareRow(example_id, verdict_, ratio_ci=ratio_ci,
                             old_ms=old.optimized_ms, new_ms=new.optimized_ms,
                             old_speedup=old.speedup, new_speedup=new.speedup)
        results.append(row)
    return results


def is_regression(row: CompareRow) -> bool:
    return row.verdict in ("slower", "failed")


ENVIRONMENT_KEYS = ("device", "hardware_key", "cpu", "driver", "cuda_runtime", "torch", "nvcc")
MEASURED_VERDICTS = ("faster", "slower", "same", "inconclusive")


def environment_differences(old: RunRecord, new: RunRecord) -> list[str]:
    """Device and software differences between two runs: a timing compared across them
    measures the machine as much as the code."""
    return [f"{key}: {old.fingerprint.get(key)!r} → {new.fingerprint.get(key)!r}"
            for key in ENVIRONMENT_KEYS
            if old.fingerprint.get(key) != new.fingerprint.get(key)
            and (old.fingerprint.get(key) or new.fingerprint.get(key))]


def comparable(rows: list[CompareRow]) -> bool:
    """Whether any pair was measured in both runs."""
    return any(row.verdict in MEASURED_VERDICTS for row in rows)


HISTOGRAM_BARS = " ▁▂▃▄▅▆▇█"  # a bin's share of the fullest bin, in eighths (blank: empty)


def histogram_lines(old: list[float], new: list[float], bins: int = 40) -> list[str]:
    """Two runs' samples of one side as text histograms over the same bins (hyperfine's
    view): where the distributions sit, their spread and any second mode, which a median and
    its interval hide. The bins span the 1st to 99th percentile of both runs together; the
    samples outside are counted in the end bins."""
    both = sorted(old + new)
    if not old or not new:
        return []
    lo, hi = both[len(both) // 100], both[min(len(both) - 1, (len(both) * 99) // 100)]
    width = (hi - lo) / bins or 1.0

    def row(samples: list[float]) -> str:
        counts = [0] * bins
        for x in samples:
            counts[min(bins - 1, max(0, int((x - lo) / width)))] += 1
        top = max(counts)
        return "".join(HISTOGRAM_BARS[-(-8 * c // top)] if c else " " for c in counts)

    def median(samples: list[float]) -> float:
        return sorted(samples)[len(samples) // 2]
    return [f"  old |{row(old)}| median {median(old):.4f} ms, n={len(old)}",
            f"  new |{row(new)}| median {median(new):.4f} ms, n={len(new)}",
            f"       {lo:<.4f} ms{' ' * max(1, bins - 18)}{hi:.4f} ms"]


def histograms(old_run: RunRecord, new_run: RunRecord) -> list[str]:
    """The optimized side's sample histograms of every example timed in both runs."""
    old_rows, new_rows = _rows(old_run), _rows(new_run)
    lines: list[str] = []
    for example_id in sorted(set(old_rows) & set(new_rows)):
        old, new = old_rows[example_id], new_rows[example_id]
        if _timed(old) and _timed(new):
            lines.append(f"{example_id} (optimized side's samples)")
            lines += histogram_lines(old.timing.stats.samples, new.timing.stats.samples)
    return lines
