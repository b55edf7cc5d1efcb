"""ch08 `thresholdtma` on a CPU-only machine: threshold_tma.cu builds for sm_90a with the
pipeline it claims (cp.async into shared memory, one group kept in flight), its math is
threshold.cu's, the pipelined schedule (modelled in Python) consumes every element once from the
slot it was copied into, and the pair SKIPs cleanly through the harness without a GPU."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from core import REPO_ROOT, cuda
from core.benchmark import shares_builder
from tests.conftest import cpu_only

CH08 = REPO_ROOT / "ch08"
SOURCE = CH08 / "threshold_tma.cu"
needs_nvcc = pytest.mark.skipif(cuda.nvcc_path() is None, reason="nvcc (CUDA toolkit) not found")


def kernel_ptx(ptx: str, name: str) -> str:
    """The body of one .entry in a PTX listing."""
    start = ptx.index(f".entry {name}")
    end = ptx.find(".entry ", start + 1)
    return ptx[start:end if end > 0 else None]


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    if cuda.nvcc_path() is None:
        pytest.skip("nvcc (CUDA toolkit) not found")
    out = tmp_path_factory.mktemp("ptx") / "threshold_tma.ptx"
    subprocess.run([cuda.nvcc_path(), "-O3", "-std=c++17", "-arch=sm_90a", f"-I{cuda.INCLUDE_DIR}",
                    "-ptx", "-o", str(out), str(SOURCE)], check=True, capture_output=True)
    return out.read_text()


@needs_nvcc
def test_threshold_tma_builds_for_sm90a_and_exports_its_launchers(tmp_path, monkeypatch):
    monkeypatch.setenv("AISP_BUILD_DIR", str(tmp_path))
    library = cuda.build(SOURCE, (9, 0))
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True,
                             text=True, check=True).stdout
    for name in ("launch_threshold_pipelined", "launch_threshold_gridstride",
                 "threshold_tma_blocks_per_sm"):
        assert re.search(rf"\bT {name}$", symbols, re.MULTILINE), name


def test_pipelined_kernel_copies_asynchronously_and_keeps_one_copy_in_flight(ptx):
    pipelined = kernel_ptx(ptx, "_Z19threshold_pipelined")
    copies = re.findall(r"cp\.async\.c[ag]\.shared\.global \[[^]]+\], \[[^]]+\], (\d+)", pipelined)
    assert len(copies) == 2 and set(copies) == {"4"}  # the first element, then the prefetch
    assert pipelined.count("cp.async.commit_group") == 2
    # the consumer waits for all but the newest group: element i landed, i + stride in flight
    assert re.findall(r"cp\.async\.wait_group (\d+)", pipelined) == ["1"]
    assert "ld.global" not in pipelined  # x arrives only through the pipeline
    gridstride = kernel_ptx(ptx, "_Z20threshold_gridstride")
    assert "cp.async" not in gridstride and "ld.global.nc.f32" in gridstride


def test_threshold_tma_runs_the_threshold_pairs_math():
    # one header holds the constants and soft_clip for both pairs' kernels
    for source in (SOURCE, CH08 / "threshold.cu"):
        text = source.read_text()
        assert '#include "soft_clip.cuh"' in text and "float soft_clip(" not in text
    header = (CH08 / "soft_clip.cuh").read_text()
    assert sorted(re.findall(r"constexpr Regime (\w+)\{([^}]*)\};", header)) == [
        ("ABOVE", "0.5f, 0.125f"), ("BELOW", "0.1f, 0.25f")]
    from ch08._threshold_common import ABOVE, BELOW
    assert (ABOVE, BELOW) == ((0.5, 0.125), (0.1, 0.25))  # the float64 reference's constants


def pipelined_schedule(x: list[float], ctas: int, threads: int) -> dict[int, float]:
    """threshold_pipelined's loop for every thread, with its two slots and its cp.async groups
    modelled: a copy lands in its slot only when a wait retires its group."""
    out: dict[int, float] = {}
    n, stride = len(x), ctas * threads
    for first in range(stride):
        slots = [float("nan"), float("nan")]
        groups: list[list[tuple[int, int]]] = [[(0, first)] if first < n else []]  # committed
        i, stage = first, 0
        while i < n:
            nxt = i + stride
            groups.append([(stage ^ 1, nxt)] if nxt < n else [])
            while len(groups) > 1:  # cp.async.wait_group 1: retire all but the newest group
                for slot, index in groups.pop(0):
                    slots[slot] = x[index]
            assert i not in out
            out[i] = slots[stage]
            i, stage = nxt, stage ^ 1
    return out


@pytest.mark.parametrize("n,ctas,threads", [(1000, 3, 32), (96, 3, 32), (5, 2, 4), (64, 1, 8)])
def test_pipelined_schedule_consumes_every_element_once_from_its_own_slot(n, ctas, threads):
    x = [float(v) for v in range(100, 100 + n)]
    consumed = pipelined_schedule(x, ctas, threads)
    assert sorted(consumed) == list(range(n))
    assert all(consumed[i] == x[i] for i in range(n))


def test_sides_share_inputs_reference_and_sources():
    from ch08.baseline_thresholdtma import LoadThenCompute
    from ch08.optimized_thresholdtma import PrefetchingThreshold
    from ch08.optimized_thresholdtma_gridstride import GridStrideThreshold

    base = LoadThenCompute()
    for side, kernel in ((PrefetchingThreshold(), 1), (GridStrideThreshold(), 0)):
        assert shares_builder(base, side)
        assert type(side).reference is type(base).reference
        assert type(side).workload is type(base).workload  # same work, same bytes and FLOPs
        assert side.source == "threshold_tma.cu" and side.kernel == kernel
    assert base.source == "threshold.cu"
    assert (CH08 / base.source).exists() and SOURCE.exists()


@cpu_only
def test_thresholdtma_skips_through_the_harness_without_a_gpu():
    from core.child import run_pair
    from tests.conftest import spec_for
    from core.discovery import discover

    chapter = next(c for c in discover(REPO_ROOT) if c.name == "ch08")
    pair = next(p for p in chapter.pairs if p.stem == "thresholdtma")
    assert {e.name for e in pair.examples} == {"thresholdtma", "thresholdtma_gridstride"}
    result = run_pair(spec_for(pair, pair.examples, iterations=2, warmup=1))
    for example in result.examples:
        assert example.status == "skipped" and "CUDA" in example.reason, example
