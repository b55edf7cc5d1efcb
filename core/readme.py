"""Measured tables in chapter READMEs, written from results.json files (never typed by hand).

Each chapter README keeps one block per GPU model between two markers:

    <!-- aisp:measured h100 -->
    ... heading, provenance, table and notes, rewritten by `aisp bench readme` ...
    <!-- aisp:end -->

`write_tables` takes one or more runs; for the same GPU a later run's rows replace an
earlier run's (a full run, then a re-run of one pair). A block that does not exist yet is
added at the end of the README's `## Measured` section (created if missing). Prose outside
the markers is left alone.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from core import atomic
from core.expectations import pair_key
from core.record import ExampleResult, PairResult, RunRecord
from core.report import notes, table

END = "<!-- aisp:end -->"


def begin(key: str) -> str:
    return f"<!-- aisp:measured {key} -->"


@dataclass
class GpuTables:
    """The rows one GPU model contributes, by chapter, and the runs they came from."""

    key: str
    device: str = ""
    runs: list[RunRecord] = field(default_factory=list)
    rows: dict[str, dict[str, ExampleResult]] = field(default_factory=dict)  # chapter -> id -> row

    def add(self, record: RunRecord, pairs: list[PairResult]) -> None:
        count = pairs[0].ranks if pairs else 1
        device = record.fingerprint.get("device", self.device)
        self.device = f"{count} × {device}" if count > 1 else device
        self.runs.append(record)
        for pair in pairs:
            for ex in pair.examples:
                self.rows.setdefault(ex.id.split(":")[0], {})[ex.id] = ex

    def block(self, chapter: str) -> str:
        rows = sorted(self.rows[chapter].values(), key=lambda ex: ex.id)
        lines = [begin(self.key), f"### {self.device}", ""]
        for record in self.runs:  # the rows each run still contributes (later runs win)
            used = sum(any(ex is row for row in rows) for pair in record.pairs for ex in pair.examples)
            if used:
                lines.append(_provenance(record, used))
        lines += ["", *_drop_gate_column(table(rows, "github")), ""]
        # gate verdicts say nothing in a README, and a negative result's reason is the pair's
        # own text (its README says it in prose); the other notes qualify the numbers
        extra = [n for n in notes(rows) if not n.startswith(("REGRESSION", "INCONCLUSIVE", "NEGATIVE"))]
        lines += [*[f"- {n}" for n in extra], *([""] if extra else []), END]
        return "\n".join(lines)


def _provenance(record: RunRecord, count: int) -> str:
    fp = record.fingerprint
    ceilings = ", ".join(f"{k.replace('_gbps', '').replace('_tflops', '')} {v:.0f}"
                         for k, v in record.ceilings.items())
    updated = " --update-expectations" if record.options.get("update_expectations") else ""
    stamp = Path(str(record.run_dir)).name  # run ids are YYYYMMDD-HHMMSS
    date = f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}" if stamp[:8].isdigit() else "?"
    return (f"{count} row{'s' if count != 1 else ''} from `bench run{updated}` on {date} at commit "
            f"{fp.get('git_commit', '?')} ({fp.get('sm_count', '?')} SMs, driver "
            f"{fp.get('driver', '?')}, CUDA {fp.get('cuda_runtime', '?')}, torch "
            f"{fp.get('torch', '?')}); ceilings measured in that run: {ceilings} (GB/s for "
            f"copy and the links, TFLOP/s for matmul).")


def _drop_gate_column(markdown: str) -> list[str]:
    """The table without its last column (the gate verdict says nothing in a README)."""
    return ["|".join(line.split("|")[:-2]) + "|" for line in markdown.splitlines()]


def place(text: str, key: str, block: str) -> str:
    """`text` with the block for `key` replaced, or added at the end of `## Measured`."""
    pattern = re.compile(re.escape(begin(key)) + r".*?" + re.escape(END), re.S)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text, count=1)
    start = text.find("## Measured")
    if start < 0:
        return text.rstrip() + "\n\n## Measured\n\n" + block + "\n"
    following = text.find("\n## ", start + 1)
    end = len(text) if following < 0 else following + 1
    return text[:end].rstrip() + "\n\n" + block + "\n" + ("\n" + text[end:] if following >= 0 else "")


def not_publishable(record: RunRecord) -> str | None:
    """Why a run's numbers do not go into chapter READMEs, or None: a CPU run (its timings
    are the host's, and no GPU provenance heads them) or a smoke run (few samples, never
    stored)."""
    if record.options.get("mode") == "smoke":
        return "a smoke run: its times come from a few samples and are neither gated nor stored"
    if str(record.fingerprint.get("device", "")).lower() in ("cpu", "") or \
            str(record.fingerprint.get("hardware_key", "")).startswith("cpu"):
        return "a CPU run: the chapter tables show GPU measurements"
    return None


def write_tables(records: list[RunRecord], root: Path, chapters: set[str] | None = None) -> list[Path]:
    """Rewrite the measured blocks of every chapter the runs cover (only `chapters`, when
    given: a run that also holds a few pairs of another chapter leaves that README alone);
    returns the READMEs written."""
    gpus: dict[str, GpuTables] = {}
    for record in records:
        hardware = record.fingerprint.get("hardware_key", "unknown")
        by_key: dict[str, list[PairResult]] = {}
        for pair in record.pairs:  # multi-GPU pairs get their own block (`2x_h200`)
            by_key.setdefault(pair_key(hardware, pair), []).append(pair)
        for key, pairs in by_key.items():
            gpus.setdefault(key, GpuTables(key)).add(record, pairs)
    written = []
    covered = {c for gpu in gpus.values() for c in gpu.rows}
    for chapter in sorted(covered if chapters is None else covered & chapters):
        readme = root / chapter / "README.md"
        text = readme.read_text() if readme.exists() else f"# {chapter}\n"
        for gpu in gpus.values():
            if chapter in gpu.rows:
                text = place(text, gpu.key, gpu.block(chapter))
        atomic.write_text(readme, text)
        written.append(readme)
    return written
