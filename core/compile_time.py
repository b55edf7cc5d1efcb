"""Cold starts: each side's time from process start to its first answer, in fresh processes.

The measurement below the compile-time goal (core.goals.compile_time). Such a variant buys a
shorter compile (regional compilation: the repeated block compiled once instead of the whole
model). Compilation is lazy and cached on disk, so the only honest measure is a cold one: for
each side the runner starts COLD_STARTS fresh child processes, the sides alternating, each
with empty Inductor and Triton caches (new temporary directories; the FX-graph and
AOT-autograd caches off), and times

    process start (interpreter, torch, the harness and the pair's modules imported) +
    setup(ctx) + make_inputs(seed) + the first run() + synchronize

Imports are in it: work a pair moves to import time is not free. The parent stamps the
wall-clock time it starts the process (AISP_SPAWNED_AT). The gate judges baseline seconds /
optimized seconds (medians); the steady-state speedup is timed as usual and reported beside,
and it must stay ≈1: a compile that is faster because it optimizes less is no win.

A side whose cold starts (setup and first call: `work_s`, without the imports' host noise)
are much faster than its setup() in the pair's own run, or whose later cold starts are much
faster than its first, kept something between processes (a cache
of its own outside the harness's temporary directories): the side fails with that reason.
A cache that was already warm before the whole run began cannot be told from a fast compiler;
the README of a compile_time pair says where its compiler keeps its caches.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

COLD_STARTS = 3  # per side; compiles take seconds to minutes, so few and alternating
PERSISTED_FACTOR = 1.5  # a later cold start this much faster than the first: something persisted


@dataclass
class ColdStart:
    """One fresh process's time to the first answer, split where the work happened."""

    setup_s: float
    first_call_s: float
    import_s: float = 0.0  # process start to the side's module imported (results before
    # 2026-11-27: 0, their cold starts began at setup())

    @property
    def total_s(self) -> float:
        return self.import_s + self.setup_s + self.first_call_s

    @property
    def work_s(self) -> float:
        """setup() and the first call: the compiling, without the imports' host noise."""
        return self.setup_s + self.first_call_s

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def fresh_cache_env(directory: Path) -> dict[str, str]:
    """Environment for a child whose compiler caches start empty (and stay out of the user's)."""
    return {"TORCHINDUCTOR_CACHE_DIR": str(directory / "inductor"),
            "TRITON_CACHE_DIR": str(directory / "triton"),
            "TORCHINDUCTOR_FX_GRAPH_CACHE": "0", "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"}


SPAWNED_AT = "AISP_SPAWNED_AT"  # the parent's time.time() when it started the process


def spawn_env() -> dict[str, str]:
    """The environment entry that lets a cold start count from its process's start."""
    return {SPAWNED_AT: repr(time.time())}


def time_cold_start(bench: Any, ctx: Any, seed: int, import_s: float = 0.0) -> tuple[ColdStart, Any]:
    """In the child: set `bench` up and call it once, timing both (core.toolchild
    --cold-start); returns the timing and the first answer. `import_s`: process start to
    `bench` imported, measured by the caller."""
    import torch

    cuda = ctx.is_cuda
    if cuda:
        torch.cuda.synchronize()
    started = time.perf_counter()
    bench.ctx = ctx
    bench.setup(ctx)
    if cuda:
        torch.cuda.synchronize()
    set_up = time.perf_counter()
    answer = bench.run(bench.make_inputs(seed))
    if cuda:
        torch.cuda.synchronize()
    return ColdStart(setup_s=set_up - started, first_call_s=time.perf_counter() - set_up,
                     import_s=import_s), answer


def measure(sides: list[str], start: Callable[[str, dict[str, str]], ColdStart],
            repeats: int | None = None,
            enough: Callable[[dict[str, list[ColdStart]]], bool] | None = None
            ) -> dict[str, list[ColdStart]]:
    """`repeats` cold starts per side, alternating sides (drift hits all alike); `start(side,
    env)` runs one fresh process with the extra environment `env` and returns its timing.
    `enough(found)`, asked after each round, ends them early (a gate run's known verdict)."""
    found: dict[str, list[ColdStart]] = {side: [] for side in sides}
    for _ in range(repeats or COLD_STARTS):
        if enough is not None and enough(found):
            break
        for side in sides:
            with tempfile.TemporaryDirectory(prefix="aisp-cold-") as tmp:
                found[side].append(start(side, {**fresh_cache_env(Path(tmp)), **spawn_env()}))
    return found


def ratio_bounds(baseline: list[ColdStart], optimized: list[ColdStart],
                 total: int | None = None) -> tuple[float, float] | None:
    """The lowest and highest ratio of medians that `total` (default COLD_STARTS) cold starts
    per side can still give, from the ones measured so far (core.decided.median_bounds);
    None while unbounded."""
    from core.decided import median_bounds

    b = median_bounds([s.total_s for s in baseline], total or COLD_STARTS)
    o = median_bounds([s.total_s for s in optimized], total or COLD_STARTS)
    if b is None or o is None or min(o) <= 0:
        return None
    return b[0] / o[1], b[1] / o[0]


def median_s(starts: list[ColdStart]) -> float:
    return statistics.median(s.total_s for s in starts)


def ratio_interval(baseline: list[ColdStart], optimized: list[ColdStart]) -> tuple[float, float]:
    """The widest ratio the few samples allow: (slowest optimized vs fastest baseline, ...)."""
    b = [s.total_s for s in baseline]
    o = [s.total_s for s in optimized]
    return min(b) / max(o), max(b) / min(o)


def persisted_problem(starts: list[ColdStart], run_setup_s: float | None = None) -> str | None:
    """A side that kept something between fresh processes: its later cold starts much faster
    than its first, or all of them much faster than its setup() in the pair's own run (which
    found the compiler caches as they were, so it cannot be colder than a cold start)."""
    if not starts:
        return None
    keep = ("something it keeps between processes (a cache outside TORCHINDUCTOR_CACHE_DIR / "
            "TRITON_CACHE_DIR) makes them warm; a cold start must compile from nothing")
    slowest = max(s.work_s for s in starts)
    if run_setup_s is not None and run_setup_s > PERSISTED_FACTOR * slowest:
        return (f"its setup() took {run_setup_s:.2f} s in the pair's run, but its cold starts, "
                f"in fresh processes with empty compiler caches, at most {slowest:.2f} s: {keep}")
    if len(starts) > 1:
        first, later = starts[0].work_s, max(s.work_s for s in starts[1:])
        if first > PERSISTED_FACTOR * later:
            return (f"its first cold start took {first:.2f} s and the later ones at most "
                    f"{later:.2f} s, each in a fresh process with empty compiler caches: {keep}")
    return None
