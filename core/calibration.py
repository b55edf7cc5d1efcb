"""The gate's tolerance, measured: A/A runs on fresh machines set it per family of pairs.

An A/A run (`bench run --aa`) times each pair's baseline against itself: every ratio it
reports would be 1.00 with no noise, so how far the ratios stray is the noise of one run's
ratio, on that machine, that day. Run it on at least two fresh machines of one GPU model and
summarize them (`bench calibrate RUN RUN ...`): for each family of pairs, the largest stray
seen, s = max |ln r|, sets the tolerance t = 1 - exp(-2 s) - a stored ratio and a later gate
run may each be off by s, in opposite directions. The families are the pairs whose time is
the GPU's ("device") and those that declare `cpu_bound` (their time is the host's, which
varies more from machine to machine). The result is calibration/<gpu key>.json, which the
gate uses from then on (core.goals.base.Goal.tolerance); a family with too few ratios keeps
the default tolerance (core.gate), and an entry that stores its own `tolerance` keeps it.
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
MIN_RATIOS = 10  # per family: fewer, and its largest stray is a guess
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
    ratios: int  # A/A ratios seen
    spread_ln: float  # the largest |ln ratio|
    worst: str  # which example, in which run
    tolerance: float | None  # None: too few ratios to set one


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


def tolerance_from(spread_ln: float) -> float:
    """t = 1 - exp(-2 s), rounded up to TOLERANCE_STEP, within TOLERANCE_RANGE."""
    raw = 1 - math.exp(-2 * spread_ln)
    stepped = math.ceil(round(raw / TOLERANCE_STEP, 6)) * TOLERANCE_STEP
    return round(min(max(stepped, TOLERANCE_RANGE[0]), TOLERANCE_RANGE[1]), 4)


def summarize(runs: list[dict[str, Any]]) -> Calibration:
    """The calibration from A/A runs' results.json contents (at least MIN_RUNS of one GPU
    model, each from a fresh machine). Raises ValueError naming what is missing."""
    keys = {run.get("fingerprint", {}).get("hardware_key") for run in runs}
    if len(keys) != 1:
        raise ValueError(f"A/A runs of one GPU model are needed; these are of {sorted(map(str, keys))}")
    if len(runs) < MIN_RUNS:
        raise ValueError(f"{len(runs)} A/A run given; at least {MIN_RUNS}, each on a fresh machine")
    seen: dict[str, list[tuple[float, str]]] = {name: [] for name in FAMILIES}
    for index, run in enumerate(runs):
        for pair in run.get("pairs", []):
            for ex in pair.get("examples", []):
                if not ex.get("id", "").endswith(f"_{AA_VARIANT}") or ex.get("status") != "ok":
                    continue
                ratio = ex.get("speedup")
                if ratio and ratio > 0:
                    seen[family_of(ex.get("cpu_bound", ""))].append(
                        (abs(math.log(ratio)), f"{ex['id']} {ratio:.3f}x (run {index + 1})"))
    if not any(seen.values()):
        raise ValueError("no verified A/A example in these runs (run `bench run --aa` first)")
    calibration = Calibration(keys.pop())
    for name, found in seen.items():
        if not found:
            continue
        spread, worst = max(found)
        calibration.families[name] = Family(
            len(found), round(spread, 5), worst,
            tolerance_from(spread) if len(found) >= MIN_RATIOS else None)
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
