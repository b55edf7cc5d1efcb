"""The front page's results table, generated from the committed expectations (never typed).

One row per stored variant of every chapter: what it shows (the first sentence of its file's
docstring), and per GPU model the stored ratio with the share of the device's measured
ceiling. `aisp bench front-page` rewrites it in the root README between

    <!-- aisp:front-page -->
    ...
    <!-- aisp:end -->

and a test fails when the committed table differs from what the committed expectations give.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from core import atomic, goals, roof, scaling
from core.discovery import source_declaration

BEGIN, END = "<!-- aisp:front-page -->", "<!-- aisp:end -->"
KEY_ORDER = ("h100", "h200", "2x_h100", "2x_h200", "4x_h100", "4x_h200", "8x_h100", "8x_h200")


@dataclass
class Row:
    chapter: str
    variant: str
    shows: str
    cells: dict[str, str] = field(default_factory=dict)  # hardware key -> its cell


def gpu_label(key: str) -> str:
    """`h100` → `H100`, `2x_h200` → `2×H200`, `sim_<model>` → `modelled` (a cost the pair's
    model prices, the same on any GPU: core.expectations.pair_key)."""
    if key.startswith("sim_"):
        return "modelled"
    count, _, gpu = key.rpartition("x_")
    return f"{count}×{gpu.upper()}" if count.isdigit() else key.upper()


def first_sentence(path: Path, limit: int = 90) -> str:
    """The first sentence of a file's docstring, cut at `limit` characters ("" without one)."""
    try:
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    except (OSError, SyntaxError):
        return ""
    sentence = re.split(r"(?<=\.)\s", " ".join(doc.split()), maxsplit=1)[0].rstrip(".")
    label, colon, rest = sentence.partition(": ")
    if colon and re.match(r"(Optimized|Variant)\b", label):  # "Optimized: one launch ..."
        sentence = rest
    return sentence if len(sentence) <= limit else sentence[:limit - 1].rstrip() + "…"


def cell(entry: dict) -> str:
    """`3.13x · 92% of copy`: the ratio the entry's goal gates (core.goals: `2.79x less
    memory`), the optimized side's share of its ceiling for a speed result, the declarations."""
    goal = goals.goal_of(entry.get("goal", goals.DEFAULT))
    text = f"{entry[goal.field]:.2f}x" + (f" {goal.gain}" if goal.gain else "")
    rates = entry.get("optimized_rates") or {}
    if goal.gates_time and rates.get("pct_of_ceiling") is not None:
        ceiling = str(rates.get("ceiling", "")).replace("_gbps", "").replace("_tflops", "")
        text += f" · {rates['pct_of_ceiling']:.0f}% of {ceiling}"
    declared = entry.get("declarations") or {}
    marks = [m for m, on in (("teaching", declared.get("teaching")),
                             ("negative", declared.get("negative_result"))) if on]
    return text + (f" ({', '.join(marks)})" if marks else "")


def rows(root: Path) -> list[Row]:
    """Every stored variant of every chapter under `root`, with its cell per hardware key."""
    found: dict[tuple[str, str], Row] = {}
    for path in sorted(root.glob("ch[0-9][0-9]/expectations_*.json")):
        key = path.stem[len("expectations_"):]
        if key.startswith("cpu"):
            continue  # CPU timings are the host's; the front page shows GPUs
        chapter = path.parent.name
        for variant, entry in json.loads(path.read_text()).get("examples", {}).items():
            row = found.get((chapter, variant))
            if row is None:
                shows = first_sentence(path.parent / f"optimized_{variant}.py")
                row = found[(chapter, variant)] = Row(chapter, variant, shows)
            row.cells[key] = cell(entry)
    return [found[k] for k in sorted(found)]


_ONLY_ON = re.compile(r'^\s+only_on\s*=\s*"([^"]+)"', re.M)


def only_on(path: Path, root: Path) -> str:
    """The `only_on` a variant file declares, or a chapter module it imports from declares."""
    return source_declaration(path, root, _ONLY_ON)


def skip_rows(root: Path, stored: list[Row], keys: list[str]) -> list[Row]:
    """A row per variant never stored that declares the hardware it needs (`only_on`): it
    SKIPs on every lent GPU, and the row says what it waits for."""
    have = {(row.chapter, row.variant) for row in stored}
    rows_ = []
    for path in sorted(root.glob("ch[0-9][0-9]/optimized_*.py")):
        variant = path.stem[len("optimized_"):]
        if (path.parent.name, variant) in have or not (needs := only_on(path, root)):
            continue
        rows_.append(Row(path.parent.name, variant, first_sentence(path),
                         {key: f"SKIP: needs {needs}" if i == 0 else "SKIP"
                          for i, key in enumerate(keys)}))
    return rows_


def table(found: list[Row], skipped: list[Row] = ()) -> str:
    keys = sorted({k for row in found for k in row.cells},
                  key=lambda k: (KEY_ORDER.index(k) if k in KEY_ORDER else len(KEY_ORDER), k))
    lines = ["| chapter | variant | what it shows | " + " | ".join(gpu_label(k) for k in keys) + " |",
             "|---|---|---|" + "---|" * len(keys)]
    for row in sorted([*found, *skipped], key=lambda r: (r.chapter, r.variant)):
        shows = row.shows.replace("|", "\\|")
        lines.append(f"| [{row.chapter}]({row.chapter}/README.md) | {row.variant} | {shows} | "
                     + " | ".join(row.cells.get(k, "–") for k in keys) + " |")
    chapters = len({row.chapter for row in found})
    note = (f"{len(found)} stored variants in {chapters} chapters, from `chNN/expectations_<gpu>.json` "
            f"(each figure: the stored ratio over the baseline, and the optimized side's share of "
            f"the ceiling measured in that run)"
            + (f"; {len(skipped)} more SKIP on the lent GPUs for hardware they lack" if skipped else "")
            + ". Regenerate with `python -m cli.aisp bench front-page`.")
    return "\n".join([note, "", *lines])


def place(text: str, block: str, begin: str = BEGIN, before: str | None = None) -> str:
    """`text` with the block between `begin` and END replaced. Without `begin`: inserted
    before the heading `before` (at the end without one), or an error naming the markers."""
    start = text.find(begin)
    if start < 0 and before is not None:
        at = text.find(f"\n{before}")
        at = len(text) if at < 0 else at + 1
        return text[:at] + f"{begin}\n{block}\n{END}\n\n" + text[at:]
    end = text.find(END, start + 1) if start >= 0 else -1
    if start < 0 or end < 0:
        raise ValueError(f"no {begin} ... {END} markers: add them where the table goes")
    return text[:start] + f"{begin}\n{block}\n" + text[end:]


def rebuilt(readme: Path, root: Path) -> tuple[str, str]:
    """`readme`'s text as it is, and with its table rebuilt from the expectations under `root`."""
    text = readme.read_text()
    found = rows(root)
    single = [k for k in KEY_ORDER[:2] if any(k in row.cells for row in found)]  # the one-GPU models
    return text, place(text, table(found, skip_rows(root, found, single)))


def regenerated(root: Path) -> dict[Path, tuple[str, str]]:
    """Every README under `root` with a generated block, as it is and as the committed
    expectations make it: the root README's results table (where it has the markers) and
    roof summary (core.roof), each chapter's scaling and roof tables (core.scaling,
    core.roof; placed before `## Measured` where they are new)."""
    found = {}
    readme = root / "README.md"
    if readme.exists():
        text = updated = readme.read_text()
        if BEGIN in text:
            updated = rebuilt(readme, root)[1]
        if roof.SUMMARY in updated:
            updated = place(updated, roof.summary_table(root), roof.SUMMARY)
        found[readme] = (text, updated)
    for chapter in sorted(root.glob("ch[0-9][0-9]")):
        path = chapter / "README.md"
        if not path.exists():
            continue
        text = updated = path.read_text()
        if series := scaling.series(chapter, root):
            updated = place(updated, scaling.table(series), scaling.BEGIN, "## Measured")
        if shares := roof.shares(chapter):
            updated = place(updated, roof.chapter_table(shares), roof.BEGIN, "## Measured")
        found[path] = (text, updated)
    return found


def stale(root: Path) -> list[Path]:
    """The READMEs whose generated blocks differ from what the expectations make them."""
    return [path for path, (text, updated) in regenerated(root).items() if text != updated]


def write_all(root: Path) -> list[Path]:
    """Rewrite every generated block under `root`; the READMEs that changed."""
    changed = []
    for path, (text, updated) in regenerated(root).items():
        if text != updated:
            atomic.write_text(path, updated)
            changed.append(path)
    return changed
