"""Each chapter README's scaling table, generated from the committed expectations (never typed).

A pair that declares `Requirements(scales="weak" | "strong")` is stored once per GPU count
(`expectations_2x_h200.json`, `expectations_4x_h200.json`, ...). Its table shows, per GPU
model, both sides' time per step at every stored count, and the scaling efficiency from the
smallest count n0 to each larger one n:

- weak scaling (the work per GPU is fixed, the global problem grows with the GPUs): ideal is
  the same time per step at every count, efficiency = t(n0) / t(n);
- strong scaling (one fixed problem split over the GPUs): ideal is time × GPUs constant,
  efficiency = n0·t(n0) / (n·t(n)).

`aisp bench front-page` (and every `--update-expectations`) rewrites it in the chapter README
(core.front_page.regenerated) between

    <!-- aisp:scaling -->
    ...
    <!-- aisp:end -->

placed before the README's `## Measured` heading where the markers are missing; a test fails
when a committed table differs from what the committed expectations give.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from core.discovery import source_declaration

BEGIN = "<!-- aisp:scaling -->"  # ... END, core.front_page's
_KEY = re.compile(r"^(\d+)x_(\w+)$")
_SCALES = re.compile(r'scales\s*=\s*"(weak|strong)"')


@dataclass
class Series:
    """One side of a scaling pair on one GPU model: its ms per step by GPU count."""
    pair: str  # the stem of the baseline file
    side: str  # "baseline", or the optimized variant's name
    gpu: str
    scaling: str
    ms: dict[int, float] = field(default_factory=dict)


def efficiency(scaling: str, n0: int, t0: float, n: int, t: float) -> float:
    """How much of the ideal a step at n GPUs keeps, against n0 (module docstring)."""
    return t0 / t if scaling == "weak" else (n0 * t0) / (n * t)


def pair_of(chapter: Path, variant: str) -> str:
    """The stem of the baseline a variant is measured against (`ddp_overlap_bucket100` →
    `ddp_overlap`): the longest stem with a baseline file that the variant's name extends."""
    stems = [p.stem[len("baseline_"):] for p in chapter.glob("baseline_*.py")]
    fits = [s for s in stems if variant == s or variant.startswith(s + "_")]
    return max(fits, key=len) if fits else variant


def series(chapter: Path, root: Path) -> list[Series]:
    """Every scaling pair stored in `chapter` at some GPU count: its baseline once and each
    optimized variant, per GPU model."""
    found: dict[tuple[str, str, str], Series] = {}
    for path in sorted(chapter.glob("expectations_*x_*.json")):
        match = _KEY.match(path.stem[len("expectations_"):])
        if not match:
            continue
        count, gpu = int(match.group(1)), match.group(2)
        for variant, entry in json.loads(path.read_text()).get("examples", {}).items():
            scaling = source_declaration(chapter / f"optimized_{variant}.py", root, _SCALES)
            if not scaling:
                continue  # a pair about exactly its GPU count (a P2P copy)
            pair = pair_of(chapter, variant)
            for side, ms in (("baseline", entry["baseline_ms"]), (variant, entry["optimized_ms"])):
                one = found.setdefault((pair, gpu, side), Series(pair, side, gpu, scaling))
                one.ms.setdefault(count, ms)  # a pair's variants share one baseline run
    order = lambda s: (s.pair, s.gpu, s.side != "baseline", s.side)
    return sorted(found.values(), key=order)


def table(found: list[Series]) -> str:
    counts = sorted({n for s in found for n in s.ms})
    header = ["pair", "side", "scaling", "GPU", *(f"{n} GPUs ms" for n in counts),
              *(f"efficiency {counts[0]}→{n}" for n in counts[1:])]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for one in found:
        n0 = min(one.ms)
        cells = [one.pair, one.side, one.scaling, one.gpu.upper(),
                 *(f"{one.ms[n]:.4g}" if n in one.ms else "–" for n in counts),
                 *(f"{efficiency(one.scaling, n0, one.ms[n0], n, one.ms[n]):.0%}"
                   if n in one.ms and n != n0 else "–" for n in counts[1:])]
        lines.append("| " + " | ".join(cells) + " |")
    note = ("Time per step of each scaling pair at every GPU count stored "
            "(`expectations_<N>x_<gpu>.json`). Efficiency against the smallest count n0: weak "
            "scaling (fixed work per GPU) t(n0)/t(n); strong scaling (one problem split over "
            "the GPUs) n0·t(n0)/(n·t(n)); 100% is ideal. Regenerate with "
            "`python -m cli.aisp bench front-page`.")
    return "\n".join(["## Scaling", "", note, "", *lines])
