"""What each target declares, read from its pair files: `bench list-targets --format json|csv`.

The pair files are imported in a child process (`python -m cli.targets OUT FILE...`), as the
runner does (core.process.child_env): they import as `chNN.<file>` from whichever folder holds
the chapters ($AISP_ROOT included), whatever they print at import stays out of the command's
stdout (which carries the JSON or CSV), and no GPU is visible to them, so nothing runs on one.
The child writes one JSON line per file as it goes: if an import takes the process down, the
files read before it keep their answers and the rest get an `error`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from core import goals
from core.discovery import Chapter

DESCRIBE_TIMEOUT_S = 600.0  # importing every pair of the repo takes ~5 s on a laptop CPU

# The flat columns of --format csv, in order (lists are joined with spaces).
CSV_COLUMNS = ["id", "pair", "chapter", "stem", "name", "variants", "requires_cuda",
               "requires_gpus", "requires_min_compute_capability", "requires_modules",
               "requires_nvcc", "requires_numa_nodes", "goal", "teaching", "negative_result",
               "cpu_bound", "error"]


def describe_file(path: Path) -> dict[str, Any]:
    """One pair file's declarations (core.benchmark's contract), or {"error": why}."""
    from core.benchmark import PairError, Requirements, option
    from core.pairfile import load_benchmark

    try:
        bench = load_benchmark(path)
        req = option(bench, "requires", Requirements())
        capability = req.min_compute_capability
        return {"requires": {
                    # what core.pairfile.unmet_requirement checks: a CUDA pair that also
                    # supports the CPU runs on a machine without a GPU
                    "cuda": bool(req.cuda and not option(bench, "supports_cpu", False)),
                    "gpus": int(req.gpus),
                    "min_compute_capability": ".".join(map(str, capability)) if capability else None,
                    "modules": sorted(req.modules), "nvcc": bool(req.nvcc),
                    "numa_nodes": int(req.numa_nodes)},
                "goal": option(bench, "goal", goals.DEFAULT),
                "teaching": bool(option(bench, "teaching", False)),
                "negative_result": option(bench, "negative_result", "") or "",
                "cpu_bound": option(bench, "cpu_bound", "") or ""}
    except PairError as exc:
        return {"error": str(exc)}
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a broken declaration is the file's problem
        return {"error": f"{path.parent.name}/{path.name}: {type(exc).__name__}: {exc}"}


def _merge_requirements(sides: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A variant runs its baseline and its optimized file: it needs what either needs."""
    reqs = [s["requires"] for s in sides if "requires" in s]
    if not reqs:
        return None
    capabilities = [r["min_compute_capability"] for r in reqs if r["min_compute_capability"]]
    return {"cuda": any(r["cuda"] for r in reqs), "gpus": max(r["gpus"] for r in reqs),
            "min_compute_capability": max(capabilities, key=lambda c: tuple(map(int, c.split("."))),
                                          default=None),
            "modules": sorted({m for r in reqs for m in r["modules"]}),
            "nvcc": any(r["nvcc"] for r in reqs), "numa_nodes": max(r["numa_nodes"] for r in reqs)}


def describe_files(paths: list[Path], root: Path) -> dict[Path, dict[str, Any]]:
    """describe_file() of each path, in one child process with `root` first on PYTHONPATH."""
    import tempfile

    from core.process import child_env

    answers: dict[Path, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="aisp-targets-") as folder:
        out = Path(folder) / "targets.jsonl"
        env = {**child_env(root), "CUDA_VISIBLE_DEVICES": ""}
        try:
            proc = subprocess.run([sys.executable, "-m", "cli.targets", str(out), *map(str, paths)],
                                  env=env, capture_output=True, text=True, timeout=DESCRIBE_TIMEOUT_S)
            trouble = (f"exit code {proc.returncode}: {(proc.stderr or proc.stdout)[-500:].strip()}"
                       if proc.returncode else "")
        except subprocess.TimeoutExpired:
            trouble = f"timed out after {DESCRIBE_TIMEOUT_S:g} s"
        if out.exists():
            for line in out.read_text().splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short when the child died
                answers[Path(entry["path"])] = entry["info"]
    for path in paths:
        answers.setdefault(path, {"error": f"{path.parent.name}/{path.name}: not read: the process "
                                           f"importing the pair files stopped ({trouble or 'no answer'})"})
    return answers


def target_rows(chapters: list[Chapter]) -> list[dict[str, Any]]:
    """One row per optimized variant (each a name `--targets` accepts), keyed as results.json
    keys its rows (id, name, chapter, stem, goal, teaching, negative_result, cpu_bound)."""
    from core.discovery import chapters_root

    files = [path for c in chapters for pair in c.pairs
             for path in [pair.baseline, *(e.optimized for e in pair.examples)]]
    info = describe_files(files, chapters_root()) if files else {}
    rows = []
    for chapter in chapters:
        for pair in chapter.pairs:
            base = info[pair.baseline]
            for example in pair.examples:
                opt = info[example.optimized]
                errors = [side["error"] for side in (base, opt) if "error" in side]
                rows.append({
                    "id": example.id, "pair": pair.id, "chapter": chapter.name, "stem": pair.stem,
                    "name": example.name, "variants": [e.name for e in pair.examples],
                    "requires": _merge_requirements([base, opt]),
                    "goal": opt.get("goal"),
                    "teaching": base.get("teaching"),  # a pair-level tag, as the runner reads it
                    "negative_result": opt.get("negative_result"),
                    "cpu_bound": opt.get("cpu_bound") or base.get("cpu_bound"),
                    "error": "; ".join(errors) or None})
    return rows


def csv_row(row: dict[str, Any]) -> dict[str, str]:
    """A target_rows() row flattened for --format csv: requires_* columns, lists joined with
    spaces, booleans as true/false, None as empty."""
    flat = {k: v for k, v in row.items() if k != "requires"}
    flat.update({f"requires_{k}": v for k, v in (row["requires"] or {}).items()})

    def cell(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return " ".join(map(str, value))
        return "" if value is None else str(value)
    return {column: cell(flat.get(column)) for column in CSV_COLUMNS}


def main(argv: list[str]) -> None:
    out, paths = Path(argv[0]), [Path(p) for p in argv[1:]]
    with open(out, "a") as handle:
        for path in paths:
            handle.write(json.dumps({"path": str(path), "info": describe_file(path)}) + "\n")
            handle.flush()  # what was read survives a crash in the next import


if __name__ == "__main__":
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    main(sys.argv[1:])
