"""Chapter 3 on a CPU: the NUMA requirement's SKIP, `hw tuning-check` against a fake /proc and
/sys tree, the feeder's building blocks, and the documentation scripts staying out of discovery.

The pairs themselves are covered by tests/test_real_pairs.py (imports, contract, `cpu_threads`
verifying on the CPU); `pinned_host` and `numa_affinity` need a GPU.
"""
from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import threading
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import core.pairfile
from cli.aisp import app
from core import REPO_ROOT
from core.benchmark import Benchmark, Requirements
from core.discovery import discover_chapter, select
from core.pairfile import unmet_requirement
from core.tuning import GpuState, GpuUnavailable, numa_node_count, render, tuning_checks
from tests.conftest import cpu_only, spec_for, vec_chapter_files, vec_pair_file

CH03 = REPO_ROOT / "ch03"


# ---------------------------------------------------------------- the NUMA requirement

def _node_tree(root: Path, nodes: int) -> Path:
    folder = root / "sys/devices/system/node"
    folder.mkdir(parents=True)
    for name in ("has_cpu", "online", "possible", "power"):  # what else lives there
        (folder / name).mkdir() if name == "power" else (folder / name).write_text("0\n")
    for n in range(nodes):
        (folder / f"node{n}").mkdir()
    return root


def test_numa_nodes_are_counted_in_sys(tmp_path):
    assert numa_node_count(_node_tree(tmp_path / "two", 2)) == 2
    assert numa_node_count(_node_tree(tmp_path / "one", 1)) == 1
    assert numa_node_count(tmp_path / "no-sys-at-all") == 1  # no NUMA support: one node


class _NeedsTwoNodes(Benchmark):
    requires = Requirements(cuda=False, numa_nodes=2)


def test_numa_requirement_says_why(monkeypatch):
    monkeypatch.setattr(core.pairfile, "numa_node_count", lambda: 1)
    assert unmet_requirement(_NeedsTwoNodes(), "cpu") == "needs 2 NUMA nodes; this machine has 1"
    monkeypatch.setattr(core.pairfile, "numa_node_count", lambda: 2)
    assert unmet_requirement(_NeedsTwoNodes(), "cpu") is None
    # the default asks for nothing, and a CUDA pair on a CPU says it needs the GPU first
    monkeypatch.setattr(core.pairfile, "numa_node_count", lambda: 1)
    assert unmet_requirement(Benchmark(), "cpu").startswith("needs a CUDA GPU")


def test_real_numa_pair_declares_two_nodes():
    from ch03.baseline_numa_affinity import get_benchmark

    assert get_benchmark().requires.numa_nodes == 2


@cpu_only
def test_a_pair_needing_two_nodes_is_skipped_with_the_reason(in_process_root, make_chapter,
                                                             monkeypatch):
    from core.child import run_pair

    needs_two = "requires = Requirements(cuda=False, numa_nodes=2)"
    files = vec_chapter_files(default=vec_pair_file(attrs=needs_two))
    files["baseline_vec.py"] = vec_pair_file(attrs=needs_two)
    make_chapter("ch95", files)
    monkeypatch.setattr(core.pairfile, "numa_node_count", lambda: 1)
    (pair, examples), = select(["ch95"], in_process_root)
    result = run_pair(spec_for(pair, examples), random.Random(0))
    assert result.status == "skipped"
    row, = result.examples
    assert row.status == "skipped"
    assert row.reason.endswith("needs 2 NUMA nodes; this machine has 1"), row.reason


# ---------------------------------------------------------------- hw tuning-check

def _fake_root(tmp_path: Path, *, governors=("performance", "performance"),
               thp="always madvise [never]", balancing="1", nodes=2) -> Path:
    root = _node_tree(tmp_path / "root", nodes)
    for cpu, governor in enumerate(governors):
        folder = root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq"
        folder.mkdir(parents=True)
        (folder / "scaling_governor").write_text(governor + "\n")
    if thp is not None:
        (root / "sys/kernel/mm/transparent_hugepage").mkdir(parents=True)
        (root / "sys/kernel/mm/transparent_hugepage/enabled").write_text(thp + "\n")
    if balancing is not None:
        (root / "proc/sys/kernel").mkdir(parents=True)
        (root / "proc/sys/kernel/numa_balancing").write_text(balancing + "\n")
    return root


def _gpus(*states: GpuState):
    return lambda: list(states)


def _gpu(index=0, persistence=True, app=1755, default_app=1755) -> GpuState:
    return GpuState(index=index, name="NVIDIA H100", persistence_mode=persistence,
                    sm_clock_mhz=345, max_sm_clock_mhz=1980, app_sm_clock_mhz=app,
                    default_app_sm_clock_mhz=default_app)


def _by_label(checks):
    return {c.label: c for c in checks}


def test_tuning_check_judges_each_setting(tmp_path):
    root = _fake_root(tmp_path, governors=("performance", "powersave"), thp="always madvise [never]",
                      balancing="1", nodes=2)
    checks = _by_label(tuning_checks(
        root, gpus=_gpus(_gpu(0, persistence=True), _gpu(1, persistence=False, app=1200)),
        memlock=lambda: (8 << 20, 8 << 20)))
    assert checks["GPU 0 persistence mode"].status == "OK"
    assert checks["GPU 1 persistence mode"].status == "CHECK"
    assert checks["GPU 0 clocks"].status == "OK"
    assert checks["GPU 1 clocks"].status == "CHECK" and "lowered" in checks["GPU 1 clocks"].value
    governor = checks["CPU frequency governor"]
    assert governor.status == "CHECK" and "powersave (1 CPUs)" in governor.value
    assert checks["transparent huge pages"].value == "never"
    assert checks["transparent huge pages"].status == "CHECK"
    assert checks["locked-memory limit (memlock)"].value == "soft 8 MiB, hard 8 MiB"
    assert checks["locked-memory limit (memlock)"].status == "CHECK"
    assert checks["NUMA balancing"].status == "CHECK" and "2 NUMA nodes" in checks["NUMA balancing"].value
    for check in checks.values():  # every check says what is recommended and why
        assert check.recommended and check.why


def test_tuning_check_all_as_recommended(tmp_path):
    root = _fake_root(tmp_path, thp="[always] madvise never", balancing="0")
    inf = resource.RLIM_INFINITY
    checks = tuning_checks(root, gpus=_gpus(_gpu()), memlock=lambda: (inf, inf))
    assert {c.label: c.status for c in checks} == {
        "GPU 0 persistence mode": "OK", "GPU 0 clocks": "OK", "CPU frequency governor": "OK",
        "transparent huge pages": "OK", "locked-memory limit (memlock)": "OK",
        "NUMA balancing": "OK"}
    assert "unlimited" in _by_label(checks)["locked-memory limit (memlock)"].value


def test_tuning_check_without_gpu_or_files_says_unknown(tmp_path):
    def no_gpu():
        raise GpuUnavailable("NVML Shared Library Not Found")

    root = tmp_path / "empty"
    root.mkdir()
    checks = _by_label(tuning_checks(root, gpus=no_gpu, memlock=lambda: (65536, 65536)))
    for label in ("GPU persistence mode", "GPU clocks"):
        assert checks[label].status == "unknown"
        assert checks[label].value.startswith("unknown: no NVIDIA GPU/NVML")
    for label in ("CPU frequency governor", "transparent huge pages", "NUMA balancing"):
        assert checks[label].status == "unknown", label
    assert checks["locked-memory limit (memlock)"].value == "soft 64 KiB, hard 64 KiB"


def test_gpus_are_read_from_nvml(monkeypatch):
    """read_gpus() on a fake NVML: GPU 1 cannot report application clocks (consumer GPUs)."""
    import pynvml

    from core.tuning import read_gpus

    def clock(kind):
        def read(handle, which):
            if kind == "app" and handle == 1:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
            return {"now": 345, "max": 1980, "app": 1755, "default": 1755}[kind]
        return read

    fake = {"nvmlInit": lambda: None, "nvmlShutdown": lambda: None,
            "nvmlDeviceGetCount": lambda: 2, "nvmlDeviceGetHandleByIndex": lambda i: i,
            "nvmlDeviceGetName": lambda h: b"NVIDIA H100 80GB HBM3",
            "nvmlDeviceGetPersistenceMode": lambda h: pynvml.NVML_FEATURE_ENABLED if h == 0
            else pynvml.NVML_FEATURE_DISABLED,
            "nvmlDeviceGetClockInfo": clock("now"), "nvmlDeviceGetMaxClockInfo": clock("max"),
            "nvmlDeviceGetApplicationsClock": clock("app"),
            "nvmlDeviceGetDefaultApplicationsClock": clock("default")}
    for name, fn in fake.items():
        monkeypatch.setattr(pynvml, name, fn)
    first, second = read_gpus()
    assert first == GpuState(0, "NVIDIA H100 80GB HBM3", True, 345, 1980, 1755, 1755)
    assert second.persistence_mode is False and second.app_sm_clock_mhz is None
    checks = _by_label(tuning_checks(gpus=lambda: [first, second], memlock=lambda: (0, 0)))
    assert checks["GPU 1 clocks"].status == "unknown"
    assert checks["GPU 1 persistence mode"].status == "CHECK"


def test_numa_balancing_on_one_node_is_fine(tmp_path):
    root = _fake_root(tmp_path, balancing="1", nodes=1)
    check = _by_label(tuning_checks(root, gpus=_gpus(), memlock=lambda: (0, 0)))["NUMA balancing"]
    assert check.status == "OK" and "1 NUMA node" in check.value


def test_tuning_check_changes_nothing(tmp_path, monkeypatch):
    """Read-only: the fake tree is byte for byte and mtime for mtime as it was, and no command
    (nvidia-smi, cpupower, sysctl) is started."""
    root = _fake_root(tmp_path)

    def state():
        return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}

    def no_commands(*args, **kwargs):
        raise AssertionError(f"tuning-check started a command: {args}")

    monkeypatch.setattr(subprocess, "Popen", no_commands)
    monkeypatch.setattr(os, "system", no_commands)
    before = state()
    render(tuning_checks(root, gpus=_gpus(_gpu()), memlock=lambda: (0, 0)))
    assert state() == before


def test_cli_tuning_check_on_this_machine():
    runner = CliRunner()
    result = runner.invoke(app, ["hw", "tuning-check"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "Read-only: nothing was changed" in result.output
    assert "locked-memory limit (memlock)" in result.output
    as_json = runner.invoke(app, ["hw", "tuning-check", "--format", "json"], catch_exceptions=False)
    assert as_json.exit_code == 0
    rows = json.loads(as_json.output)
    assert {r["status"] for r in rows} <= {"OK", "CHECK", "unknown"}
    assert {"setting", "value", "status", "recommended", "why"} <= set(rows[0])
    if not torch.cuda.is_available():
        gpu_rows = [r for r in rows if r["setting"].startswith("GPU")]
        assert gpu_rows and all(r["value"].startswith("unknown: no NVIDIA GPU/NVML") for r in gpu_rows)


# ---------------------------------------------------------------- the feeder's building blocks

def test_pinned_ring_hands_out_slots_in_turn_on_cpu():
    from ch03._feeder import PinnedRing

    ring = PinnedRing.allocate(2, (4,), torch.float32, "cpu")
    first = ring.next_free()
    assert ring.send(first.fill_(1)) is first  # on a CPU the batch stays where it is
    second = ring.next_free()
    assert second is not first
    with pytest.raises(ValueError, match="next_free"):
        ring.send(first)  # not the slot whose turn it is
    ring.send(second)
    assert ring.next_free() is first  # round and round


def test_feeder_pool_sets_its_threads_and_restores_the_default():
    from ch03._feeder import feeder_pool

    callers, callers_cpus = torch.get_num_threads(), os.sched_getaffinity(0)
    cpu = min(callers_cpus)
    pool = feeder_pool(2, cpus=[cpu], intra_op_threads=1)
    try:
        seen = set(pool.map(lambda _: (threading.current_thread().name,
                                       frozenset(os.sched_getaffinity(0)), torch.get_num_threads()),
                            range(8)))
        assert {(affinity, threads) for _, affinity, threads in seen} == {(frozenset([cpu]), 1)}
        assert torch.get_num_threads() == callers  # this thread is untouched
        later: list[int] = []  # a thread started afterwards gets the process default back
        thread = threading.Thread(target=lambda: later.append(torch.get_num_threads()))
        thread.start()
        thread.join()
        assert later == [callers]
    finally:
        pool.shutdown()
    assert os.sched_getaffinity(0) == callers_cpus  # only the workers were bound


def test_feeder_pool_reports_a_worker_that_cannot_start():
    from ch03._feeder import feeder_pool

    with pytest.raises(RuntimeError, match="a worker could not start"):
        feeder_pool(2, cpus=[os.cpu_count() + 4096])  # no such CPU


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_pin_memory_reuses_cached_pinned_blocks():
    """What `pinned_host_copy` stands on: after the first batches, `pin_memory()` allocates no
    new pinned memory (PyTorch's caching host allocator hands the same blocks back)."""
    stats = getattr(torch.cuda, "host_memory_stats", None)  # torch >= 2.7
    if stats is None or "num_host_alloc" not in stats():
        pytest.skip("this torch does not count pinned-block allocations (host_memory_stats)")
    samples = [torch.randint(0, 256, (3, 224, 224), dtype=torch.uint8) for _ in range(256)]
    for _ in range(5):
        torch.stack(samples).pin_memory().to("cuda", non_blocking=True)
    torch.cuda.synchronize()
    warm = stats()["num_host_alloc"]
    for _ in range(50):
        torch.stack(samples).pin_memory().to("cuda", non_blocking=True)
    torch.cuda.synchronize()
    assert stats()["num_host_alloc"] - warm <= 2  # not one per batch


class _FakeCudart:
    """cudaHostRegister/Unregister that only record what they were asked (no driver here)."""

    def __init__(self):
        self.registered: dict[int, int] = {}

    def cudaHostRegister(self, pointer, size, flags):  # noqa: N802 - the CUDA name
        self.registered[pointer] = size
        return 0

    def cudaHostUnregister(self, pointer):  # noqa: N802
        self.registered.pop(pointer)
        return 0


@pytest.fixture
def fake_gpu_node(monkeypatch):
    """NVML says the GPU's node is this process's lowest usable CPU; CUDA calls are faked, so
    numa_affinity's setup, run and teardown run on the CPU (a one-node GPU machine SKIPs the
    pair, so this is where its code runs before a two-node machine)."""
    import pynvml

    usable = sorted(os.sched_getaffinity(0))
    if len(usable) < 2:
        pytest.skip("needs 2 usable CPUs: one 'local' to the fake GPU and one not")
    local = usable[0]
    mask = [0] * ((os.cpu_count() + 63) // 64)
    mask[local // 64] |= 1 << (local % 64)
    monkeypatch.setattr(pynvml, "nvmlInit", lambda: None)
    monkeypatch.setattr(pynvml, "nvmlShutdown", lambda: None)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetHandleByIndex", lambda index: ("gpu", index))
    monkeypatch.setattr(pynvml, "nvmlDeviceGetCpuAffinity", lambda handle, words: mask[:words])
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    cudart = _FakeCudart()
    monkeypatch.setattr(torch.cuda, "cudart", lambda: cudart)
    monkeypatch.setattr(torch.cuda, "check_error", lambda result: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    return local, cudart


def test_numa_affinity_sides_run_with_a_fake_gpu_node(fake_gpu_node):
    from ch03._numa_affinity_common import BATCH_BYTES, RING_SLOTS
    from ch03.baseline_numa_affinity import AnyNode
    from ch03.optimized_numa_affinity import GpuLocalNode
    from core.benchmark import BenchContext
    from core.verify import compare

    local, cudart = fake_gpu_node
    everywhere = os.sched_getaffinity(0)
    sides = {"baseline": AnyNode(), "optimized": GpuLocalNode()}
    for bench in sides.values():
        bench.ctx = BenchContext(device="cpu")
        bench.setup(bench.ctx)
    assert len(cudart.registered) == 2 * RING_SLOTS  # every batch buffer page-locked
    assert set(cudart.registered.values()) == {BATCH_BYTES}

    def where(bench):
        return set(bench.pool.map(lambda _: frozenset(os.sched_getaffinity(0)), range(8)))

    assert where(sides["optimized"]) == {frozenset([local])}
    assert where(sides["baseline"]) == {frozenset(everywhere)}
    assert os.sched_getaffinity(0) == everywhere  # the harness's thread is never bound

    images = sides["baseline"].make_inputs(3)
    expected = sides["baseline"].reference(images)
    for name, bench in sides.items():
        for _ in range(RING_SLOTS + 1):  # round the ring once
            out = bench.run(images)
            assert compare(expected, out).ok, name
    for bench in sides.values():
        bench.teardown()
    assert cudart.registered == {}


# ---------------------------------------------------------------- the documentation scripts

SCRIPTS = sorted((CH03 / "scripts").iterdir())


def test_scripts_say_they_are_documentation():
    names = {p.name for p in SCRIPTS}
    assert {"Dockerfile", "gpu-pod.yaml", "os_tuning.sh"} <= names
    for path in SCRIPTS:
        header = path.read_text()[:1500]
        assert "DOCUMENTATION" in header, path.name
        assert "never" in header and "lent" in header, path.name


def test_discovery_ignores_the_scripts():
    chapter = discover_chapter(CH03)
    assert chapter.orphans == []
    files = {p.baseline.parent for p in chapter.pairs}
    files |= {e.optimized.parent for p in chapter.pairs for e in p.examples}
    assert files == {CH03}
    assert {p.stem for p in chapter.pairs} == {"cpu_threads", "numa_affinity", "pinned_host"}


def test_a_pairs_own_unavailable_reason_is_a_skip_once_its_requirements_are_met():
    class _NoGds(Benchmark):
        supports_cpu = True

        def unavailable(self):
            return "GPUDirect Storage is not available here (compatibility mode ON)"

    assert unmet_requirement(_NoGds(), "cpu") == "GPUDirect Storage is not available here (compatibility mode ON)"
    _NoGds.unavailable = lambda self: None
    assert unmet_requirement(_NoGds(), "cpu") is None

    class _NeedsCuda(Benchmark):  # the declared requirement is named first
        def unavailable(self):
            raise AssertionError("asked before its requirements were met")

    assert unmet_requirement(_NeedsCuda(), "cpu").startswith("needs a CUDA GPU")
