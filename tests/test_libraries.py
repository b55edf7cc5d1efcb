"""What a library already does, done by it: file locks (filelock) and tables (tabulate).
(The cache directory's XDG_CACHE_HOME: tests/test_hardware_metrics.py; NVTX ranges without
the nvtx package: tests/test_reports.py.)"""
from __future__ import annotations

import re
import sys
from concurrent.futures import ThreadPoolExecutor

from core import REPO_ROOT, cuda


def test_concurrent_builds_of_one_source_compile_it_once(tmp_path, monkeypatch):
    """core.cuda.build holds a filelock.FileLock while it compiles: four builds at once of a
    file nobody built yet run nvcc once, and all get the same library."""
    calls = tmp_path / "nvcc-calls"
    nvcc = tmp_path / "nvcc"  # a stand-in that takes a while and writes the -o file
    nvcc.write_text(f"#!{sys.executable}\nimport sys, time\n"
                    f"open({str(calls)!r}, 'a').write('x')\ntime.sleep(0.5)\n"
                    "open(sys.argv[sys.argv.index('-o') + 1], 'w').write('library')\n")
    nvcc.chmod(0o755)
    monkeypatch.setattr(cuda, "nvcc_path", lambda: str(nvcc))
    monkeypatch.setattr(cuda, "nvcc_version", lambda: "stand-in 1.0")
    monkeypatch.setenv("AISP_BUILD_DIR", str(tmp_path / "build"))
    source = tmp_path / "kernel.cu"
    source.write_text("__global__ void kernel() {}\n")
    with ThreadPoolExecutor(4) as pool:
        built = list(pool.map(lambda _: cuda.build(source, (9, 0)), range(4)))
    assert len(set(built)) == 1 and built[0].read_text() == "library"
    assert calls.read_text() == "x"


def test_tables_are_tabulates_and_rich_draws_only_the_progress_bar():
    """One table library: tabulate writes every table, plain on the terminal and GitHub
    markdown in summary.md and the READMEs (rich's tables write no markdown); rich, which typer
    brings anyway, draws only `bench run`'s live progress bar."""
    sources = [*(REPO_ROOT / "cli").glob("*.py"), *(REPO_ROOT / "core").rglob("*.py")]
    uses_rich = {p.relative_to(REPO_ROOT).as_posix() for p in sources
                 if re.search(r"^\s*(from|import) rich\b", p.read_text(), re.M)}
    assert uses_rich == {"cli/progress.py"}
