"""Measured tables in chapter READMEs, written from results.json files (never typed by hand).

Each chapter README keeps one block per GPU model between two markers:

    <!-- aisp:measured h100 -->
    ... heading, provenance, table and notes, rewritten by `aisp bench readme` ...
    <!-- aisp:end -->

`write_tables` takes one or more runs; for the same GPU a later run's rows replace an
earlier run's (a full run, then a re-run of one pair). With `keep_others` the rows of pairs
the runs do not cover stay (a re-measured pair replaces only its own rows), and `forget`
drops the rows of pairs whose code changed since, in every block of their chapter (or in
one: `ch04:symmetric_memory@2x_h200`, a variant that no longer runs at that count). A block
that does not exist yet is added at the end of the README's `## Measured` section (created
if missing). Prose outside the markers is left alone.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from core import atomic
from core.expectations import pair_key
from core.record import ExampleResult, PairResult, RunRecord
from core.report import notes, table

from tabulate import tabulate

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

    def block(self, chapter: str, old: OldBlock | None = None, forget: frozenset[str] = frozenset()) -> str:
        rows = sorted(self.rows[chapter].values(), key=lambda ex: ex.id)
        provenance = []
        for record in self.runs:  # the rows each run still contributes (later runs win)
            used = sum(any(ex is row for row in rows) for pair in record.pairs for ex in pair.examples)
            if used:
                provenance.append(_provenance(record, used))
        header, cells = _cells(_drop_gate_column(table(rows, "github")))
        # gate verdicts say nothing in a README, and a negative result's reason is the pair's
        # own text (its README says it in prose); the other notes qualify the numbers
        extra = [n for n in notes(rows) if not n.startswith(("REGRESSION", "INCONCLUSIVE", "NEGATIVE"))]
        kept = old.without({*(row_id(c) for c in cells), *forget}) if old else None
        if kept and kept.rows:
            provenance += ["Rows not re-measured by these runs, from the block's earlier runs:",
                           *kept.provenance]
            cells += [c for c in kept.rows if len(c) == len(header)]
            extra += kept.notes
        return render(self.key, self.device, provenance, header, cells, extra)


def row_id(cells: list[str]) -> str:
    return cells[0].split()[0] if cells and cells[0].split() else ""


def _cells(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    """A github table's header and rows, as stripped cells."""
    split = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines if line.strip()]
    return split[0], split[2:]


def render(key: str, device: str, provenance: list[str], header: list[str],
           rows: list[list[str]], extra: list[str]) -> str:
    lines = [begin(key), f"### {device}", "", *provenance, ""]
    lines += [tabulate(sorted(rows, key=row_id), headers=header, tablefmt="github",
                       disable_numparse=True), ""]
    lines += [*[f"- {n}" for n in extra], *([""] if extra else []), END]
    return "\n".join(lines)


@dataclass
class OldBlock:
    """A measured block as the README has it: rows and notes read back from its text."""

    device: str
    provenance: list[str]  # each earlier run's line, without its row count
    header: list[str]
    rows: list[list[str]]
    notes: list[str]

    def without(self, ids: set[str]) -> OldBlock:
        rows = [r for r in self.rows if row_id(r) not in ids]
        left = {row_id(r) for r in rows}
        notes = [n for n in self.notes if (m := _NOTE_PAIR.search(n)) is None or m.group(1) in left]
        return OldBlock(self.device, self.provenance, self.header, rows, notes)


_NOTE_PAIR = re.compile(r"\b(ch\d\d:[\w]+)")


def read_block(text: str, key: str) -> OldBlock | None:
    """The block for `key` in a README's text, or None."""
    match = re.search(re.escape(begin(key)) + r"(.*?)" + re.escape(END), text, re.S)
    if not match:
        return None
    lines = match.group(1).strip().splitlines()
    device = lines[0][4:] if lines and lines[0].startswith("### ") else key
    table_lines = [line for line in lines if line.startswith("|")]
    provenance = [re.sub(r"^(\d+ rows? from|earlier rows from)", "earlier rows from", line)
                  for line in lines if re.match(r"^(\d+ rows? from|earlier rows from)", line)]
    notes = [line[2:] for line in lines if line.startswith("- ")]
    header, rows = _cells(table_lines) if table_lines else ([], [])
    return OldBlock(device, provenance, header, rows, notes)


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


def write_tables(records: list[RunRecord], root: Path, chapters: set[str] | None = None,
                 keep_others: bool = False, forget: frozenset[str] = frozenset()) -> list[Path]:
    """Rewrite the measured blocks of every chapter the runs cover (only `chapters`, when
    given: a run that also holds a few pairs of another chapter leaves that README alone);
    with `keep_others`, rows the runs do not cover stay; `forget` (example ids) drops rows
    from every block of their chapters, or from one block where the id ends in `@KEY`
    (`ch04:symmetric_memory@2x_h200`). Returns the READMEs written."""
    def forgotten_in(key: str) -> frozenset[str]:
        return frozenset(i.partition("@")[0] for i in forget if i.partition("@")[2] in ("", key))

    gpus: dict[str, GpuTables] = {}
    for record in records:
        hardware = record.fingerprint.get("hardware_key", "unknown")
        by_key: dict[str, list[PairResult]] = {}
        for pair in record.pairs:  # multi-GPU pairs get their own block (`2x_h200`)
            by_key.setdefault(pair_key(hardware, pair), []).append(pair)
        for key, pairs in by_key.items():
            gpus.setdefault(key, GpuTables(key)).add(record, pairs)
    written = []
    covered = {c for gpu in gpus.values() for c in gpu.rows} | {i.split(":")[0] for i in forget}
    for chapter in sorted(covered if chapters is None else covered & chapters):
        readme = root / chapter / "README.md"
        text = readme.read_text() if readme.exists() else f"# {chapter}\n"
        for gpu in gpus.values():
            if chapter in gpu.rows:
                old = read_block(text, gpu.key) if keep_others else None
                text = place(text, gpu.key, gpu.block(chapter, old, forgotten_in(gpu.key)))
        for key in re.findall(r"<!-- aisp:measured (\S+) -->", text) if forget else []:
            if key in gpus and chapter in gpus[key].rows:
                continue  # rewritten above
            old = read_block(text, key)
            left = old.without(set(forgotten_in(key))) if old else None
            if old and left and len(left.rows) < len(old.rows):
                text = place(text, key, render(key, old.device, old.provenance, old.header,
                                               left.rows, left.notes))
        atomic.write_text(readme, text)
        written.append(readme)
    return written
