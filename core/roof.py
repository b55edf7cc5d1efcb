"""How close to the roof: generated from the committed expectations (never typed).

Each chapter README gets a table of its stored optimized variants that a ceiling bounds: the
ceiling (copy bandwidth, a matmul precision, a host link) and the optimized side's share of
it on each one-GPU model, as measured in the run that stored it. The root README gets one
line per chapter: how many of its untagged memory-bound optimized variants there are, their
median share of the copy ceiling and the lowest, per GPU model (the target: median ≥ 93%,
each ≥ 80%, or a profiled reason in the chapter README). `aisp bench front-page` (and every
`--update-expectations`) rewrites them (core.front_page.regenerated) between

    <!-- aisp:roof -->           (chapter READMEs, before `## Measured`)
    <!-- aisp:roof-summary -->   (the root README, where its markers are)
    ...
    <!-- aisp:end -->
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path


BEGIN, SUMMARY = "<!-- aisp:roof -->", "<!-- aisp:roof-summary -->"
GPUS = ("h100", "h200")  # the one-GPU models whose shares the tables put side by side
TARGET_MEDIAN, TARGET_EACH = 93.0, 80.0  # % of copy, untagged memory-bound variants


@dataclass
class Share:
    """One stored optimized variant against its ceiling, per GPU model (the run that stored
    it judged which ceiling bounds it, so the GPUs may differ: ch06 warp_divergence is
    copy-bound on the H100 and fp32-bound on the H200)."""
    variant: str
    tags: str  # "teaching", "negative", or ""
    pct: dict[str, float] = field(default_factory=dict)
    ceilings: dict[str, str] = field(default_factory=dict)  # "copy", "matmul_bf16", "h2d_pinned", ...

    @property
    def ceiling(self) -> str:
        names = list(dict.fromkeys(self.ceilings.values()))
        if len(names) == 1:
            return names[0]
        return ", ".join(f"{name} ({gpu.upper()})" for gpu, name in self.ceilings.items())

    def memory_bound_on(self, gpu: str) -> bool:
        return self.ceilings.get(gpu) == "copy"


def shares(chapter: Path) -> list[Share]:
    found: dict[str, Share] = {}
    for gpu in GPUS:
        path = chapter / f"expectations_{gpu}.json"
        if not path.exists():
            continue
        for variant, entry in json.loads(path.read_text()).get("examples", {}).items():
            rates = entry.get("optimized_rates") or {}
            if rates.get("pct_of_ceiling") is None or entry.get("goal", "speed") != "speed":
                continue
            declared = entry.get("declarations") or {}
            tags = ", ".join(t for t, on in (("teaching", declared.get("teaching")),
                                             ("negative", declared.get("negative_result"))) if on)
            ceiling = str(rates.get("ceiling", "")).replace("_gbps", "").replace("_tflops", "")
            one = found.setdefault(variant, Share(variant, tags))
            one.pct[gpu], one.ceilings[gpu] = float(rates["pct_of_ceiling"]), ceiling
    return [found[k] for k in sorted(found)]


def chapter_table(found: list[Share]) -> str:
    lines = ["| variant | ceiling | " + " | ".join(g.upper() for g in GPUS) + " | tags |",
             "|---|---|" + "---|" * len(GPUS) + "---|"]
    for one in found:
        cells = [f"{one.pct[g]:.0f}%" if g in one.pct else "–" for g in GPUS]
        lines.append(f"| {one.variant} | {one.ceiling} | " + " | ".join(cells) + f" | {one.tags} |")
    note = ("The optimized side's share of the ceiling that bounds it, measured in the run that "
            "stored it (`expectations_<gpu>.json`); memory-bound kernels against the copy "
            "ceiling, GEMMs against the matmul ceiling of their precision. Regenerate with "
            "`python -m cli.aisp bench front-page`.")
    return "\n".join(["## How close to the roof", "", note, "", *lines])


def summary_table(root: Path) -> str:
    lines = ["| chapter | " + " | ".join(f"{g.upper()} median · lowest (% of copy)" for g in GPUS)
             + " |", "|---|" + "---|" * len(GPUS)]
    for chapter in sorted(root.glob("ch[0-9][0-9]")):
        untagged = [s for s in shares(chapter) if not s.tags]
        if not any(s.memory_bound_on(gpu) for s in untagged for gpu in GPUS):
            continue
        cells = []
        for gpu in GPUS:
            measured = sorted((s.pct[gpu], s.variant) for s in untagged if s.memory_bound_on(gpu))
            cells.append(f"{statistics.median(p for p, _ in measured):.0f}% · {measured[0][0]:.0f}% "
                         f"({measured[0][1]}) of {len(measured)}" if measured else "–")
        lines.append(f"| [{chapter.name}]({chapter.name}/README.md#how-close-to-the-roof) | "
                     + " | ".join(cells) + " |")
    note = (f"Untagged memory-bound optimized variants (not teaching, not a declared negative "
            f"result) against the measured copy ceiling: the median, the lowest and how many. "
            f"The aim is a median of at least {TARGET_MEDIAN:.0f}% and each at least "
            f"{TARGET_EACH:.0f}%, or a profiled reason in the chapter README. Regenerate with "
            f"`python -m cli.aisp bench front-page`.")
    return "\n".join([note, "", *lines])
