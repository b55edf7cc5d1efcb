"""Precompile: fill the compiler caches in parallel before the timed pairs run.

A pair that uses torch.compile, FlexAttention or Triton kernels compiles them in its child,
one pair after another: 10-20 s of Inductor and Triton work per compiled side on an H100
host, about a quarter of a full run and most of a smoke run. That work is CPU-bound and
cached on disk (Inductor's FX-graph and AOT-autograd caches, Triton's kernel cache), so the
runner does it first, several sides at a time, the way it builds the .cu files first: each
compiling side gets a fresh process (core.toolchild --cold-start: setup(), make_inputs, one
run()) with the run's ordinary caches, and the pairs' own children then find the compiled
code there. Nothing is timed in this phase and no result comes from it; a side that fails
here compiles in its own child as before and fails there, with the reason, if it must.

What it leaves out, so that what the pairs measure cannot change:
- sides whose compile benchmarks candidate kernels (`max-autotune`): their choice is baked
  into the cached code, and a choice made while other compiles share the GPU could differ
  (under `--mode smoke`, which keeps no timing, they are precompiled as well);
- pairs that run as several ranks.
A compile_time pair is precompiled like any other: its cold starts run later, in processes
of their own with empty compiler caches in a temporary folder, so the ordinary caches warmed
here reach only its steady-state child (its setup() went from ~37 s to a cache load).
Inductor's runtime choice among a kernel's launch configurations is also a benchmark; the
kernels compiled here do not keep it on disk (`autotune_local_cache`, core.child), so every
pair makes that choice itself, on an idle GPU, as it did before this phase existed.

`bench run --no-precompile` turns the phase off.
"""
from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from core.discovery import Example, Pair

# Source text that means a side compiles at run time (in its file or a chapter module it imports).
COMPILES = re.compile(r"torch\.compile\(|flex_attention|triton\.jit|triton\.autotune")
# ... and text that keeps it out of this phase (see the module docstring).
AUTOTUNES = re.compile(r"max[-_]autotune")
MULTI_GPU = re.compile(r"gpus\s*=\s*[2-9]")
# `from ch10._attention_common import ...` or, inside a chapter, `from ._vec_common import ...`
LOCAL_IMPORT = re.compile(r"^\s*(?:from|import)\s+(ch\d\d|)\.(\w+)", re.MULTILINE)
TIMEOUT_S = 300.0  # per side; a side that takes longer compiles in its own child instead


@dataclass
class Job:
    """One side to precompile."""

    pair: Pair
    side: str  # "baseline" or a variant's name


@dataclass
class PrecompileRecord:
    """What the phase did (results.json `precompile`)."""

    sides: int = 0
    seconds: float = 0.0
    parallel: int = 0
    failed: list[str] = field(default_factory=list)  # "chNN:stem/side: see logs/..."
    # wall seconds of each side's process, start to exit ("chNN:stem/side"): where the phase's
    # time goes (process start, imports and CUDA context included, which the side's own
    # setup_s in its .precompile.json leaves out)
    side_seconds: dict[str, float] = field(default_factory=dict)

    def slowest(self, count: int = 3) -> list[tuple[str, float]]:
        """The `count` sides that took longest, longest first."""
        return sorted(self.side_seconds.items(), key=lambda item: -item[1])[:count]

    def to_dict(self) -> dict[str, object]:
        return {"sides": self.sides, "seconds": self.seconds, "parallel": self.parallel,
                "failed": self.failed, "side_seconds": self.side_seconds}


def source_text(path: Path, seen: set[Path] | None = None) -> str:
    """A pair file's text plus that of the chapter modules it imports, recursively."""
    seen = set() if seen is None else seen
    if path in seen or not path.exists():
        return ""
    seen.add(path)
    text = path.read_text(errors="replace")
    for chapter, module in LOCAL_IMPORT.findall(text):
        folder = path.parent.parent / chapter if chapter else path.parent
        text += "\n" + source_text(folder / f"{module}.py", seen)
    return text


def jobs_for(selection: list[tuple[Pair, list[Example]]], smoke: bool = False) -> list[Job]:
    """The sides worth precompiling, in run order. A smoke run times nothing it keeps, so
    there the max-autotune sides are precompiled too (ch14 model_compile's takes ~70 s)."""
    jobs = []
    for pair, examples in selection:
        base = source_text(pair.baseline)
        if runs_as_ranks(pair):
            continue
        sides = [("baseline", base)] + [(e.name, source_text(e.optimized)) for e in examples]
        jobs += [Job(pair, name) for name, text in sides
                 if COMPILES.search(text) and (smoke or not AUTOTUNES.search(text))]
    return jobs


def runs_as_ranks(pair: Pair) -> bool:
    """The pair declares several GPUs (`gpus = N`): it runs as ranks, or drives every GPU."""
    return bool(MULTI_GPU.search(source_text(pair.baseline)))


def parallelism(cpus: int | None = None) -> int:
    """Sides compiled at once, each compiling its kernels in its own process (no Inductor
    worker pool: starting one costs a few seconds of imports per side). Every side holds its
    model on the GPU while it compiles, so not more than 8."""
    return max(1, min(8, (cpus or os.cpu_count() or 2) // 2))


def precompile(jobs: list[Job], spec_for: Callable[[Pair], Path], logs: Path,
               parallel: int | None = None, timeout_s: float = TIMEOUT_S,
               progress: Callable[[int, int], None] | None = None) -> PrecompileRecord:
    """Run `jobs` in fresh processes, `parallel` at a time (`spec_for(pair)`: the pair's spec
    file, as its own child will read it); Ctrl-C stops every one of them. `progress(done,
    total)` is called as each side ends (the phase takes minutes on a slow host)."""
    from core.process import kill_group, start_fresh

    parallel = parallel or parallelism()
    record = PrecompileRecord(sides=len(jobs), parallel=parallel)
    started = time.perf_counter()
    waiting = list(jobs)
    running: list[tuple[Job, subprocess.Popen, float, Path, Path]] = []  # job, process, start, log, result
    try:
        while waiting or running:
            while waiting and len(running) < parallel:
                job = waiting.pop(0)
                spec = spec_for(job.pair)
                name = f"{job.pair.id.replace(':', '_')}.{job.side}.precompile"
                log, out = logs / f"{name}.log", logs / f"{name}.json"
                proc = start_fresh(["--cold-start", str(spec), job.side, str(out)], log,
                                   job.pair.baseline.parent.parent,
                                   {"TORCHINDUCTOR_COMPILE_THREADS": "1", "AISP_PRECOMPILING": "1"},
                                   module="core.toolchild")
                running.append((job, proc, time.perf_counter(), log, out))
            time.sleep(0.1)
            for item in list(running):
                job, proc, began, log, out = item
                code = proc.poll()
                late = code is None and time.perf_counter() - began > timeout_s
                if code is None and not late:
                    continue
                kill_group(proc.pid)
                proc.wait()
                running.remove(item)
                record.side_seconds[f"{job.pair.id}/{job.side}"] = round(time.perf_counter() - began, 2)
                if code != 0 or _reported_error(out):
                    why = "timed out" if late else "failed"
                    record.failed.append(f"{job.pair.id}/{job.side}: {why}, see logs/{log.name}")
                if progress is not None:
                    progress(len(jobs) - len(waiting) - len(running), len(jobs))
    finally:  # Ctrl-C or an error: nothing started here keeps running
        for _, proc, _, _, _ in running:
            kill_group(proc.pid)
            proc.wait()
    record.seconds = round(time.perf_counter() - started, 2)
    return record


def _reported_error(result: Path) -> bool:
    import json

    try:
        return "error" in json.loads(result.read_text()).get("payload", {})
    except (OSError, ValueError, AttributeError):
        return True
