"""Shared helpers: fake chapters (ch90..ch99) written into tmp dirs, fake pair sources.

Fake pair files are real modules: the runner's child process imports them as
`chNN.<file>` with the fake root first on PYTHONPATH (core.runner._child), and the
in-process tests put the fake root on sys.path the same way. They share their input
builder `_vec_common.py` (imported relatively) like real chapters share `_<stem>_common.py`.
"""
from __future__ import annotations

import os

# Fake workloads are tiny: one intra-op thread is faster and steadier for them (on a 2-vCPU
# box torch's default thread pool made a 5 ms CPU training step take 0.5 s). Set before torch
# is imported; child processes inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import re
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

import pytest
import torch

from core.discovery import Example, Pair
from core.runner import RunOptions

# The suite targets a CPU-only machine; tests asserting CPU-only outcomes (device "cpu",
# CUDA-only pairs skipped, hardware key "cpu") are skipped where a GPU is visible.
cpu_only = pytest.mark.skipif(torch.cuda.is_available(),
                              reason="asserts CPU-only behaviour (device 'cpu', CUDA pairs skipped)")

VEC_N = 64
CPU_KEY = __import__("core.hardware", fromlist=["cpu_key"]).cpu_key()  # this machine's key

VEC_COMMON = f'''
"""Input builder shared by the fake vec pairs: x + y on a tiny CPU vector."""
import torch

from core.benchmark import BenchContext, Benchmark, Workload

N = {VEC_N}


class VecBench(Benchmark):
    supports_cpu = True

    def make_inputs(self, seed: int):
        gen = self.generator(seed)
        return self.randn(N, gen=gen), self.randn(N, gen=gen)

    def workload(self) -> Workload:
        return Workload(bytes=3 * N * 4, flops=N)
'''

_HEADER = '''\
import time

import torch

from core.benchmark import Requirements, Tolerance, Workload

from ._vec_common import VecBench


'''

GOOD_RUN = "x, y = inputs\nreturn x + y"


def vec_pair_file(run: str = GOOD_RUN, *, attrs: str = "", setup: str = "",
                  factory: str = "Bench()") -> str:
    """Source of a pair file whose benchmark subclasses VecBench.

    run:     body of run(self, inputs); inputs is (x, y), two vectors made from the seed
    attrs:   class attributes or methods, e.g. "supports_cpu = False"
    setup:   setup() statements (weights, workspaces)
    factory: what get_benchmark() returns
    """
    body = ""
    if attrs.strip():
        body += textwrap.indent(textwrap.dedent(attrs).strip(), "    ") + "\n\n"
    if setup.strip():
        body += ("    def setup(self, ctx):\n        super().setup(ctx)\n"
                 + textwrap.indent(textwrap.dedent(setup).strip(), " " * 8) + "\n\n")
    body += "    def run(self, inputs):\n" + textwrap.indent(textwrap.dedent(run).strip(), " " * 8) + "\n"
    return (_HEADER + "class Bench(VecBench):\n" + body
            + f"\n\ndef get_benchmark():\n    return {factory}\n")


def write_chapter(root: Path, name: str, files: dict[str, str]) -> Path:
    """Write a fake chapter package `root/name` holding `files` (name → source); returns it."""
    assert re.fullmatch(r"ch9\d", name), "fake chapters are ch90..ch99 (no clash with real ones)"
    chapter = Path(root) / name
    chapter.mkdir(parents=True, exist_ok=True)
    init = chapter / "__init__.py"
    if not init.exists():
        init.write_text("")
    for file_name, source in files.items():
        (chapter / file_name).write_text(textwrap.dedent(source).lstrip())
    return chapter


def vec_chapter_files(**variants: str) -> dict[str, str]:
    """_vec_common.py + baseline_vec.py + optimized_vec[_<variant>].py for each keyword.

    The keyword `default` is optimized_vec.py; any other keyword k is optimized_vec_k.py."""
    files = {"_vec_common.py": VEC_COMMON, "baseline_vec.py": vec_pair_file()}
    for key, source in variants.items():
        files["optimized_vec.py" if key == "default" else f"optimized_vec_{key}.py"] = source
    return files


def spec_for(pair: Pair, examples: list[Example], iterations: int | None = 3,
             warmup: int | None = 1, seed: int = 0):
    """The spec core.runner.run_pair hands a child (for in-process core.child.run_pair)."""
    from core.runner import pair_spec

    return pair_spec(pair, examples, RunOptions(iterations=iterations, warmup=warmup, seed=seed))


def _purge_fake_chapter_modules() -> None:
    for name in [m for m in sys.modules if re.match(r"ch9\d(\.|$)", m)]:
        del sys.modules[name]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    """Tests see the real repo unless they point AISP_ROOT at a fake root themselves."""
    for var in ("AISP_ROOT", "AISP_BUILD_DIR", "AISP_CUDA_ARCH"):
        monkeypatch.delenv(var, raising=False)


class _SharedForkServers:
    """One fork server per test worker and preload setting, shared by every run the tests
    start: a server imports torch (~2 s of a CPU) and there are dozens of runs. Its children
    are forked as in `bench run` (the environment and chapters root travel with each request);
    only the server's start is not repeated. A server that died (a test broke it) is replaced."""

    def __init__(self) -> None:
        self.servers: dict[bool, object] = {}

    def get(self, preload: bool):
        import core.process

        server = self.servers.get(preload)
        if server is None or server.proc.poll() is not None:
            server = self.servers[preload] = core.process.open_fork_server(preload=preload)
        return server

    def close(self) -> None:
        for server in self.servers.values():
            if server is not None:
                server.close()


@pytest.fixture(scope="session")
def _fork_servers():
    servers = _SharedForkServers()
    yield servers
    servers.close()


@pytest.fixture(autouse=True)
def _shared_fork_server(request, _fork_servers, monkeypatch):
    """A run's fork_server() hands out this worker's shared server instead of starting one,
    unless the test is marked `own_fork_server` (it tests the server's start itself)."""
    if request.node.get_closest_marker("own_fork_server"):
        return
    from contextlib import contextmanager

    import core.process
    import core.runner

    @contextmanager
    def shared(env=None, preload=True):
        if env or os.environ.get("AISP_FORK_SERVER", "1") == "0":
            with core.process.fork_server(env, preload):  # as in a run: its own, or none
                yield
            return
        core.process.use_fork_server(_fork_servers.get(preload))
        try:
            yield
        finally:
            core.process.use_fork_server(None)
    monkeypatch.setattr(core.runner, "fork_server", shared)


@pytest.fixture
def fake_root(tmp_path) -> Path:
    root = tmp_path / "chapters"
    root.mkdir()
    return root


@pytest.fixture
def make_chapter(fake_root) -> Callable[[str, dict[str, str]], Path]:
    """make_chapter("ch95", {"baseline_x.py": src, ...}) writes a fake chapter in fake_root."""
    return lambda name, files: write_chapter(fake_root, name, files)


@pytest.fixture
def fast_options(tmp_path) -> RunOptions:
    """Short runs: 3 timed samples and 1 warm-up call per side."""
    return RunOptions(iterations=3, warmup=1, timeout_s=120, output_dir=tmp_path / "runs")


@pytest.fixture
def in_process_root(fake_root, monkeypatch):
    """Put the fake root on sys.path (as the child's PYTHONPATH does); forget its modules after."""
    monkeypatch.syspath_prepend(str(fake_root))
    _purge_fake_chapter_modules()
    yield fake_root
    _purge_fake_chapter_modules()


@pytest.fixture
def store_noisy(monkeypatch):
    """Tiny CPU pairs timed 3 times are 'noisy' (core.gate.noisy_reason) and never
    stored, and on a loaded CPU an honest toy pair can measure below 1x (never stored
    without negative_result, core.runner.slower_undeclared); tests of --update-expectations
    itself lift both rules (each has its own test in test_honest_headlines.py)."""
    import core.gate
    import core.runner

    monkeypatch.setattr(core.gate, "MIN_SAMPLES", 1)
    monkeypatch.setattr(core.gate, "MAX_INTERVAL_RATIO", float("inf"))
    monkeypatch.setattr(core.runner, "slower_undeclared", lambda ex: False)


SKIP_REPORT_ENV = "AISP_SKIP_REPORT"  # .ci/run: where to write one line per skipped test


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """With $AISP_SKIP_REPORT set, write each skipped test as `nodeid<TAB>reason` there, so CI
    can check every skip's reason against the ones allowed on a CPU-only machine (.ci/run).
    Runs in the controlling process (with xdist the workers' reports are gathered here)."""
    path = os.environ.get(SKIP_REPORT_ENV)
    if not path:
        return
    lines = []
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        lines.append(f"{report.nodeid}\t{' '.join(reason.split())}\n")
    Path(path).write_text("".join(lines))


def run_with_desk(args: list[str], token: str, timeout: float, **popen: Any) -> tuple[str, str]:
    """Run `args` with a token desk holding `token` as its stdin (core.signing), as the runner
    starts a child; its stdout and stderr."""
    import subprocess

    from core.signing import TokenDesk

    desk = TokenDesk(token)
    try:
        proc = subprocess.Popen(args, stdin=desk.child_end, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **popen)
        desk.close_child_end()
        desk.start()
        return proc.communicate(timeout=timeout)
    finally:
        desk.close()


def cubin_registers_and_stack(cubin: bytes) -> tuple[int, int]:
    """(registers, stack bytes) per thread of a compiled kernel, from cuobjdump's resource
    usage (Triton's own copy, else one on PATH; the test is skipped without either)."""
    import shutil
    import subprocess
    import tempfile

    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    tool = str(tool) if tool.exists() else shutil.which("cuobjdump")
    if tool is None:
        pytest.skip("cuobjdump not found")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([tool, "-res-usage", f.name], capture_output=True, text=True,
                             check=True).stdout
    return int(re.search(r"REG:(\d+)", out).group(1)), int(re.search(r"STACK:(\d+)", out).group(1))


def run_interpreted(script: str, timeout_s: float = 600, **env: str) -> Any:
    """Run `script` in a fresh Python under Triton's CPU interpreter (TRITON_INTERPRET=1 must
    be set before triton is imported, hence the child) and return what it printed as
    `RESULTS <json>`, its last such line; the test fails with the child's output otherwise."""
    import json
    import subprocess

    from core import REPO_ROOT

    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=timeout_s,
                          env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO_ROOT), **env})
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULTS ")]
    assert proc.returncode == 0 and lines, (
        f"interpreter run failed (exit {proc.returncode}):\n"
        f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULTS "):])
