"""The planted suite: every cheat in tests/planted fails with its rule's message, every
honest twin passes — through the real runner and child processes.

Each planted file states its verdict in `EXPECT` ("pass", or a phrase the failure reason
must contain). GPU-only planted pairs (side streams, launch-bound) are SKIPPED here and run
by tests/test_gpu.py on a GPU.
"""
from __future__ import annotations

import ast
import shutil
from pathlib import Path

import torch

from core import REPO_ROOT
from core.discovery import select
from core.runner import RunOptions, run_suite
from tests.conftest import cpu_only

PLANTED = REPO_ROOT / "tests" / "planted"


def expected(path: Path) -> str:
    """The file's EXPECT constant, read without importing it."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "EXPECT":
            return node.value.value
    raise AssertionError(f"{path.name} sets no EXPECT")


def planted_chapter(root: Path, name: str = "ch96") -> Path:
    chapter = root / name
    chapter.mkdir(parents=True)
    (chapter / "__init__.py").write_text("")
    for file in PLANTED.glob("*.py"):
        shutil.copy(file, chapter / file.name)
    return chapter


def helper_processes(marker: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


def run_planted(root: Path, tmp_path: Path, iterations: int | None = 6):
    """The planted chapter through the real runner; rows by name, and the chapter folder."""
    chapter = planted_chapter(root)
    options = RunOptions(iterations=iterations, warmup=None if iterations is None else 1,
                         timeout_s=120, output_dir=tmp_path / "runs")
    record = run_suite(select(["ch96"], root=root), options)
    return chapter, {ex.name: ex for ex in record.rows}


def check_verdicts(chapter: Path, rows: dict) -> list[str]:
    """Every planted variant ended as its EXPECT says ("pass", or phrases separated by "|",
    one of which the failure reason contains); returns the names that ran."""
    from tests.planted.optimized_helper_process import MARKER

    ran = []
    for name, row in sorted(rows.items()):  # the whole picture first, then the verdicts
        print(f"{name:28s} {row.status:8s} {row.speedup or 0:7.2f}x  {row.reason[:150]!r}")
    for file in sorted(chapter.glob("optimized_*.py")):
        name = file.stem[len("optimized_"):]
        row, want = rows[name], expected(file)
        if row.status == "skipped":
            assert "needs a CUDA GPU" in row.reason and not torch.cuda.is_available(), (name, row.reason)
            continue
        if want == "pass":
            assert row.status == "ok" and row.speedup, f"{name} (honest) failed: {row.reason}"
        else:
            assert row.status == "failed", f"{name} (cheat) passed with {row.speedup}"
            assert any(phrase in row.reason for phrase in want.split("|")), f"{name}: {row.reason}"
        ran.append(name)
    assert not helper_processes(MARKER), "a pair's helper process outlived its pair"
    return ran


@cpu_only
def test_every_cheat_is_caught_and_every_twin_passes(fake_root, tmp_path):
    chapter, rows = run_planted(fake_root, tmp_path)
    assert len(check_verdicts(chapter, rows)) >= 20


def test_every_planted_file_states_its_verdict():
    files = sorted(PLANTED.glob("*_*.py"))
    assert files
    for file in files:
        if file.name.startswith(("baseline_", "optimized_")):
            assert expected(file)


def test_cheats_and_twins_come_in_pairs():
    """At least as many honest twins as cheats, and the issue's classes are all there."""
    verdicts = {f.stem: expected(f) for f in PLANTED.glob("optimized_*.py")}
    cheats = [n for n, v in verdicts.items() if v != "pass"]
    honest = [n for n, v in verdicts.items() if v == "pass"]
    assert len(honest) >= len(cheats) - 1  # hang has no twin: every other pair is one
    for name in ("cache_attr", "lru_identity", "alias", "setup_answer", "stream_escape",
                 "stream_backpressure", "timer", "forge"):
        assert f"optimized_planted_{name}" in verdicts or f"optimized_{name}" in verdicts
