"""Profiling runs, kept apart from timing runs (a profiler changes what it measures).

    minimal: NVTX ranges (aisp_<side>_setup / _warmup / _timed) and one torch.profiler
             Chrome trace per side, plus its top kernels.
    deep:    minimal, then Nsight Compute on one timed iteration of each side (filtered to
             the side's `aisp_<side>_timed` NVTX range) with a short per-kernel summary;
             Nsight Systems likewise where `nsys` exists. A missing tool is a SKIP, not a crash.
    memory:  one CUDA allocator snapshot per side (torch.cuda.memory._record_memory_history,
             from before its setup() to after two calls; open it at pytorch.org/memory_viz)
             and the allocation sites that held the most bytes at the side's peak.
"""
from __future__ import annotations

import contextlib
import csv
import io
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

PROFILE_MODES = ("none", "minimal", "deep", "memory")
SNAPSHOT_ENTRIES = 200_000  # allocator events kept per side (the history is a ring buffer)
TOP_SITES = 5
TRACE_CALLS = 3  # timed iterations recorded per side in a torch.profiler trace
# WarpStateStats says what the warps waited on (the reason a kernel sits below its roof)
NCU_SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis",
                "WarpStateStats")
# Per-kernel summary: duration, DRAM and SM throughput (% of peak), achieved occupancy, and
# waves per SM (a kernel of one partial wave cannot fill the machine, whatever its code).
NCU_METRICS = {
    "gpu__time_duration.sum": "duration",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",  # Hopper's name
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "launch__waves_per_multiprocessor": "waves",
}


def range_name(side: str, phase: str) -> str:
    """NVTX range of one phase of one side; plain characters so ncu filters match it."""
    return f"aisp_{side}_{phase}"


@contextlib.contextmanager
def nvtx_range(name: str) -> Iterator[None]:
    """An NVTX push/pop range: the `nvtx` package's where it is installed (colored ranges),
    else torch.cuda.nvtx's (any CUDA build of torch), else nothing (a CPU build)."""
    try:
        import nvtx
    except ImportError:
        nvtx = None
    if nvtx is not None:
        with nvtx.annotate(message=name, color="green"):
            yield
        return
    import torch

    try:
        torch.cuda.nvtx.range_push(name)
    except (RuntimeError, AttributeError):  # "NVTX functions not installed": a CPU build
        yield
        return
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()


def trace(fn: Callable[[], Any], path: Path, side: str, device: str) -> list[dict[str, Any]]:
    """Record TRACE_CALLS calls of `fn` with torch.profiler; write a Chrome trace; return the
    top kernels (GPU) or operators (CPU) by total time."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(TRACE_CALLS):
            with nvtx_range(range_name(side, "timed")):
                fn()
        if device == "cuda":
            torch.cuda.synchronize()
    path.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(path))
    return top_events(prof.events(), device)


def top_events(events: Any, device: str, limit: int = 10) -> list[dict[str, Any]]:
    """Aggregate profiler events by name: GPU kernels on CUDA, CPU operators otherwise."""
    import torch

    totals: dict[str, dict[str, Any]] = {}
    for event in events:
        on_gpu = event.device_type == torch.autograd.DeviceType.CUDA
        if on_gpu != (device == "cuda"):
            continue
        if not on_gpu and getattr(event, "cpu_parent", None) is not None:
            continue  # only top-level CPU ops, so times are not counted twice
        entry = totals.setdefault(event.name, {"name": event.name, "calls": 0, "total_us": 0.0})
        entry["calls"] += 1
        entry["total_us"] += event.time_range.elapsed_us()
    ranked = sorted(totals.values(), key=lambda e: e["total_us"], reverse=True)[:limit]
    for entry in ranked:
        entry["calls_per_run"] = entry["calls"] / TRACE_CALLS
        entry["us_per_run"] = entry["total_us"] / TRACE_CALLS
    return ranked


def ncu_command(rep: Path, side: str, child_args: list[str], *, ncu: str = "ncu",
                replay_mode: str = "kernel", clock_control: str = "none") -> list[str]:
    """Nsight Compute on the kernels inside the side's timed NVTX range only.

    `--clock-control none` keeps the GPU's own clocks, so durations are comparable with the
    harness's timings (ncu's default `base` lengthened kernels by ~20% on an H100)."""
    command = [ncu, "--nvtx", "--nvtx-include", f"{range_name(side, 'timed')}/",
               "--replay-mode", replay_mode, "--clock-control", clock_control]
    for section in NCU_SECTIONS:
        command += ["--section", section]
    return command + ["--export", str(rep), "--force-overwrite",
                      sys.executable, "-m", "core.toolchild", *child_args]


def ncu_summary_command(rep: Path, ncu: str = "ncu") -> list[str]:
    return [ncu, "--import", str(rep), "--csv", "--page", "raw",
            "--metrics", ",".join(NCU_METRICS)]


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """Rows of `ncu --csv --page raw`: a header row, a units row, then one row per kernel."""
    rows = list(csv.reader(io.StringIO(text.strip())))
    rows = [r for r in rows if r and not r[0].startswith("==")]  # drop ncu's log lines
    if len(rows) < 2:
        return []
    header, units, data = rows[0], rows[1], rows[2:]
    kernels = []
    for row in data:
        record = dict(zip(header, row))
        kernel: dict[str, Any] = {"kernel": record.get("Kernel Name", "?")}
        for metric, key in NCU_METRICS.items():
            raw = record.get(metric, "").replace(",", "")
            try:
                value = float(raw)
            except ValueError:
                continue  # n/a, or a metric this GPU names differently
            if key == "duration":
                unit = units[header.index(metric)] if metric in header else "ns"
                scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0,
                         "msecond": 1e3, "ms": 1e3}.get(unit, 1e-3)
                kernel["duration_us"] = value * scale
            else:
                kernel[key] = value
        kernels.append(kernel)
    return kernels


def nsys_command(rep: Path, child_args: list[str], nsys: str = "nsys") -> list[str]:
    return [nsys, "profile", "--trace", "cuda,nvtx", "--force-overwrite", "true",
            "--output", str(rep), sys.executable, "-m", "core.toolchild", *child_args]


def run_tool(command: list[str], timeout_s: float, log: Path, env: dict[str, str],
             cwd: Path) -> tuple[int | None, str]:
    """Run a profiler command; returns (exit code or None on timeout, output tail)."""
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout_s:g} s"
    output = proc.stdout + proc.stderr
    log.write_text(output)
    return proc.returncode, output[-2000:]


def which(tool: str) -> str | None:
    """The tool's path, also where the CUDA toolkit's bin is not on PATH."""
    found = shutil.which(tool)
    if found:
        return found
    for base in (Path("/usr/local/cuda/bin"), *sorted(Path("/opt/nvidia").glob("nsight-*/*"))):
        if (base / tool).exists():
            return str(base / tool)
    return None


# --- entry points run inside a child process (core.toolchild --profile-*) --------------------

def _prepared_sides(spec: Any, device: str) -> dict[str, tuple[Any, Any]]:
    """Every side of `spec`, set up, with the inputs of one seed and two warm-up calls,
    each phase inside its own NVTX range. Returns side → (benchmark, inputs)."""
    from core.benchmark import BenchContext
    from core.pairfile import load_benchmark

    paths = {"baseline": spec.baseline, **{e.name: e.path for e in spec.examples}}
    sides, inputs = {}, None
    for name, path in paths.items():
        bench = load_benchmark(Path(path))
        with nvtx_range(range_name(name, "setup")):
            bench.ctx = BenchContext(seed=spec.seed, device=device)
            bench.setup(bench.ctx)
            if inputs is None:  # the baseline's builder, shared by every side
                inputs = bench.make_inputs(spec.seed + 1)
        with nvtx_range(range_name(name, "warmup")):
            for _ in range(2):
                bench.run(inputs)
            if device == "cuda":
                import torch

                torch.cuda.synchronize()
        sides[name] = (bench, inputs)
    return sides


def profile_minimal(spec: Any, out_dir: Path) -> dict[str, Any]:
    """One torch.profiler trace per side (NVTX-annotated), with its top kernels."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    report = {}
    for name, (bench, inputs) in _prepared_sides(spec, device).items():
        path = out_dir / f"{name}.trace.json"
        report[name] = {"trace": str(path),
                        "top": trace(lambda: bench.run(inputs), path, name, device)}
    return report


def profile_side(spec: Any, side: str) -> None:
    """One timed iteration of one side inside its NVTX range, for ncu/nsys to capture."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    bench, inputs = _prepared_sides(spec, device)[side]
    with nvtx_range(range_name(side, "timed")):
        bench.run(inputs)
    if device == "cuda":
        torch.cuda.synchronize()


def profile_memory(spec: Any, out_dir: Path) -> dict[str, Any]:
    """Each side's allocator history from before its setup() to after two calls, one side at
    a time (sides set up earlier stay alive, as in the timing run; their blocks are not in
    this side's history)."""
    import torch

    from core.benchmark import BenchContext
    from core.pairfile import load_benchmark

    if not torch.cuda.is_available():
        return {"status": "skipped", "reason": "allocator snapshots need a CUDA device"}
    paths = {"baseline": spec.baseline, **{e.name: e.path for e in spec.examples}}
    report, inputs, kept = {}, None, []
    for name, path in paths.items():
        bench = load_benchmark(Path(path))
        torch.cuda.synchronize()
        torch.cuda.memory._record_memory_history(max_entries=SNAPSHOT_ENTRIES, stacks="python")
        try:
            bench.ctx = BenchContext(seed=spec.seed, device="cuda")
            bench.setup(bench.ctx)
            if inputs is None:  # the baseline's builder, shared by every side
                inputs = bench.make_inputs(spec.seed + 1)
            for _ in range(2):
                bench.run(inputs)
            torch.cuda.synchronize()
            snapshot = torch.cuda.memory._snapshot()
        finally:
            torch.cuda.memory._record_memory_history(enabled=None)
        path_out = out_dir / f"{name}.memory.pickle"
        with open(path_out, "wb") as handle:
            import pickle

            pickle.dump(snapshot, handle)
        report[name] = {"snapshot": str(path_out), "top": top_sites(snapshot)}
        kept.append(bench)  # alive, as in the timing run
    return {"sides": report}


def top_sites(snapshot: dict[str, Any], limit: int = TOP_SITES) -> list[dict[str, Any]]:
    """Replay the snapshot's allocation history and return the sites (the first stack frame
    outside torch and the harness) holding the most bytes at the moment the history peaked."""
    live: dict[int, tuple[int, str]] = {}  # address -> (bytes, site)
    by_site: dict[str, int] = {}
    current = peak = 0
    at_peak: dict[str, int] = {}
    for trace in snapshot.get("device_traces", []):
        for event in trace:
            action, addr = event.get("action"), event.get("addr")
            if action == "alloc":
                size, site = event.get("size", 0), _site(event.get("frames", []))
                live[addr] = (size, site)
                by_site[site] = by_site.get(site, 0) + size
                current += size
                if current > peak:
                    peak, at_peak = current, dict(by_site)
            elif action == "free_requested" and addr in live:  # its bytes leave the side's use
                size, site = live.pop(addr)
                by_site[site] -= size
                current -= size
    ranked = sorted(at_peak.items(), key=lambda item: -item[1])[:limit]
    return [{"site": site, "bytes": nbytes} for site, nbytes in ranked if nbytes > 0]


def _site(frames: list[dict[str, Any]]) -> str:
    """'ch13/_memory_profiling_common.py:88 forward' — the first frame that is the pair's."""
    for frame in frames:
        name = str(frame.get("filename", ""))
        if "/torch/" in name or "/core/" in name or name.startswith("<"):
            continue
        short = "/".join(Path(name).parts[-2:])
        return f"{short}:{frame.get('line', '?')} {frame.get('name', '')}".strip()
    return "(inside torch)"
