"""The gate's tolerance, measured on fresh machines, per family of pairs.

Two kinds of evidence, each from at least two fresh machines of one GPU model:
- A/A runs (`bench run --aa`) time each pair's baseline against itself: every ratio would
  be 1.00 with no noise, so a ratio r strays |ln r| from the truth, and a stored ratio and a
  later gate run, each off that far the other way, lie d = 2 |ln r| apart.
- Runs of the same commit (`bench run`, no code change between them): the same pair's
  speedups S1, S2 on two machines lie d = |ln(S1 / S2)| apart, host differences included
  (what a host-paced pair's gate must allow when its entry was stored on another VM).
`bench calibrate RUN RUN ...` takes either kind; per family, the largest d seen over at least
MIN_RATIOS examples sets the tolerance t = 1 - exp(-d). The families are the pairs whose
time is the GPU's ("device") and those that declare `cpu_bound`. The result is
calibration/<gpu key>.json, which the gate uses from then on (core.goals.base.Goal.tolerance);
a family with too few examples keeps the default (core.gate), and an entry that stores its
own `tolerance` keeps it.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from core import atomic
from core.discovery import Example, Pair, chapters_root

AA_VARIANT = "aa"  # the A/A example of pair chNN:stem is chNN:stem_aa (its baseline, twice)
FAMILIES = ("device", "cpu_bound")
MIN_RUNS = 2  # fresh machines: one machine's A/A runs say nothing about the next machine
MIN_RATIOS = 10  # examples per family: fewer, and the largest distance is a guess
TOLERANCE_STEP = 0.005  # tolerances are rounded up to this
TOLERANCE_RANGE = (0.03, 0.50)  # never tighter than 3%, never looser than 50%


def aa_selection(selection: list[tuple[Pair, list[Example]]]) -> list[tuple[Pair, list[Example]]]:
    """Each selected pair once, with one example: its baseline file against itself."""
    return [(pair, [Example(pair.chapter, pair.stem, AA_VARIANT, pair.baseline, pair.baseline)])
            for pair, _ in selection]


def family_of(cpu_bound: str) -> str:
    return "cpu_bound" if cpu_bound else "device"


@dataclass
class Family:
    ratios: int  # distances seen (A/A ratios, or pairs of runs of one example)
    spread_ln: float  # the largest distance d between a stored ratio and a gate run's
    worst: str  # which example, in which run(s)
    tolerance: float | None  # None: too few to set one
    source: str = "aa"  # "aa": A/A runs; "runs": runs of the same commit


@dataclass
class Calibration:
    key: str  # the GPU model (expectations key without the count)
    families: dict[str, Family] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)  # each run's machine and commit

    def tolerance(self, family: str) -> float | None:
        found = self.families.get(family)
        return found.tolerance if found else None

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "method": __doc__.split("\n\n")[1].replace("\n", " "),
                "families": {name: asdict(f) for name, f in self.families.items()},
                "runs": self.runs}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibration:
        return cls(data["key"], {name: Family(**f) for name, f in data.get("families", {}).items()},
                   data.get("runs", []))


def tolerance_from(distance_ln: float) -> float:
    """t = 1 - exp(-d), rounded up to TOLERANCE_STEP, within TOLERANCE_RANGE."""
    raw = 1 - math.exp(-distance_ln)
    stepped = math.ceil(round(raw / TOLERANCE_STEP, 6)) * TOLERANCE_STEP
    return round(min(max(stepped, TOLERANCE_RANGE[0]), TOLERANCE_RANGE[1]), 4)


def _speedups(run: dict[str, Any]) -> dict[str, tuple[float, str]]:
    """A run's verified speedups by example id, with each example's family."""
    return {ex["id"]: (ex["speedup"], family_of(ex.get("cpu_bound", "")))
            for pair in run.get("pairs", []) for ex in pair.get("examples", [])
            if ex.get("status") == "ok" and (ex.get("speedup") or 0) > 0}


def _distances(runs: list[dict[str, Any]]) -> tuple[str, dict[str, list[tuple[float, str]]]]:
    """The kind of runs ("aa" or "runs") and, per family, each distance d with where."""
    measured = [_speedups(run) for run in runs]
    ids = {i for m in measured for i in m}
    aa = {i.endswith(f"_{AA_VARIANT}") for i in ids}
    if len(aa) > 1:
        raise ValueError("these runs mix A/A rows and ordinary ones: pass A/A runs (bench run "
                         "--aa) or runs of one commit, not both")
    seen: dict[str, list[tuple[float, str]]] = {name: [] for name in FAMILIES}
    if aa == {True}:
        for index, found in enumerate(measured):
            for example, (ratio, family) in found.items():
                seen[family].append((2 * abs(math.log(ratio)),
                                     f"{example} {ratio:.3f}x (run {index + 1})"))
        return "aa", seen
    commits = {run.get("fingerprint", {}).get("git_commit") for run in runs}
    if len(commits) != 1:
        raise ValueError(f"runs of different commits ({', '.join(sorted(map(str, commits)))}) "
                         f"measure a code change, not the noise: pass runs of one commit")
    for example in sorted(ids):
        both = [(m[example][0], i) for i, m in enumerate(measured) if example in m]
        if len(both) < 2:
            continue
        (low, i), (high, j) = min(both), max(both)
        seen[measured[i][example][1]].append((math.log(high / low), f"{example} {low:.3f}x (run "
                                              f"{i + 1}) / {high:.3f}x (run {j + 1})"))
    return "runs", seen


def summarize(runs: list[dict[str, Any]]) -> Calibration:
    """The calibration from results.json contents of A/A runs or of runs of one commit (at
    least MIN_RUNS of one GPU model, each from a fresh machine). Raises ValueError naming
    what is missing."""
    keys = {run.get("fingerprint", {}).get("hardware_key") for run in runs}
    if len(keys) != 1:
        raise ValueError(f"runs of one GPU model are needed; these are of {sorted(map(str, keys))}")
    if len(runs) < MIN_RUNS:
        raise ValueError(f"{len(runs)} run given; at least {MIN_RUNS}, each on a fresh machine")
    source, seen = _distances(runs)
    if not any(seen.values()):
        raise ValueError("no verified example measured in these runs (A/A: `bench run --aa`; "
                         "or runs of one commit that share pairs)")
    calibration = Calibration(keys.pop())
    for name, found in seen.items():
        if not found:
            continue
        distance, worst = max(found)
        calibration.families[name] = Family(
            len(found), round(distance, 5), worst,
            tolerance_from(distance) if len(found) >= MIN_RATIOS else None, source)
    for run in runs:
        fp = run.get("fingerprint", {})
        calibration.runs.append({k: fp.get(k) for k in ("device", "host", "cpu", "cpu_cores",
                                                        "driver", "git_commit")}
                                | {"run_dir": run.get("run_dir")})
    return calibration


def path_for(key: str, root: Path | None = None) -> Path:
    """calibration/<key>.json beside the chapters (AISP_ROOT or the repository)."""
    return (root or chapters_root()) / "calibration" / f"{key}.json"


def write(calibration: Calibration, root: Path | None = None) -> Path:
    path = path_for(calibration.key, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, json.dumps(calibration.to_dict(), indent=2) + "\n")
    return path


def load(key: str, root: Path | None = None) -> Calibration | None:
    path = path_for(key, root)
    if not path.exists():
        return None
    try:
        return Calibration.from_dict(json.loads(path.read_text()))
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a calibration file ({exc}); rewrite it with `bench "
                         f"calibrate` or delete it") from exc


# The calibration of the GPU model this run measures, set once by the runner (the gate runs
# in the runner's process); None: the defaults of core.gate.
_active: Calibration | None = None


def activate(key: str, root: Path | None = None) -> Calibration | None:
    global _active
    _active = load(key.split("x_", 1)[-1], root)
    return _active


def measured_tolerance(cpu_bound: str) -> float | None:
    """The measured tolerance of this run's GPU model for the family, if there is one."""
    return _active.tolerance(family_of(cpu_bound)) if _active else None
