"""Runs a selection of pairs, each in its own child process, and streams results to disk.

A run directory holds:
    results.jsonl   one line per pair, appended as each pair finishes (survives a crash)
    results.csv     one row per example (core.results_csv), rewritten atomically after each
                    pair and with results.json
    results.json    the whole run, written at the end (and on Ctrl-C)
    logs/<pair>.log the child's stdout/stderr (logs/requirements.log: the requirements check)

Each pair runs in a child process (core.process, core.child) with a timeout; what comes back
is a typed core.record.PairResult, to which the runner adds rates and gate verdicts. Before
the pairs run, one process checks every baseline's requirements (core.precheck): a pair that
cannot run on this machine is reported SKIPPED without a child process of its own.
"""
from __future__ import annotations

import ast
import json
import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from core import REPO_ROOT, atomic, calibration, front_page, goals, precheck, precompile, results_csv, side_by_side
from core import expectations as expect
from core.declarations import rules_changed
from core.decided import Floor
from core.discovery import Example, Pair
from core.events import Listener, Note, PairFinished, PairStarted, RunStarted
from core.expectations import pair_key
from core.gate import GateResult
from core.metrics import rates
from core.process import child_env, fork_server, run_child
from core.stacks import frames_in, ranks_in_log, stacks_dir, stacks_of
from core.record import ExampleResult, PairResult, PairSpec, RunRecord, VariantSpec
from core.report import write_reports


@dataclass
class RunOptions:
    iterations: int | None = None
    warmup: int | None = None
    seed: int = 0
    timeout_s: float = 600.0
    update_expectations: bool = False
    strict: bool = False
    output_dir: Path = REPO_ROOT / "artifacts" / "runs"
    resume: Path | None = None  # an earlier run directory: its finished pairs are kept
    profile: str = "none"  # none | minimal | deep | memory (core.profiling)
    ncu_replay_mode: str = "kernel"
    ncu_clock_control: str = "none"
    mode: str = "full"  # smoke: few samples, one goodput replay, no cold starts, nothing gated or stored
    precompile: bool = True  # fill the compiler caches in parallel first (core.precompile)
    jobs: int | None = None  # smoke: pairs at a time (core.side_by_side); None: its default on a GPU
    gpus: int | None = None  # scaling multi-GPU pairs run as this many ranks (None: every GPU)


SMOKE_GATE = GateResult("smoke", "smoke run: not gated (few samples, shapes a pair may "
                                        "shrink; `--mode full` measures)")


def make_run_dir(output_dir: Path) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_dir = Path(output_dir) / stamp
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = Path(output_dir) / f"{stamp}-{suffix}"
    (run_dir / "logs").mkdir(parents=True)
    return run_dir


def probe(run_dir: Path, timeout_s: float = 300.0, gpus: int | None = None) -> dict[str, Any]:
    """The device's fingerprint and ceilings, from a child; `gpus` (`--gpus N`) picks whose
    cached link ceilings (`hw peak --gpus N`) the multi-GPU pairs are measured against."""
    out = run_dir / "probe.json"
    extra = ["--gpus", str(gpus)] if gpus else []
    outcome = run_child(["--probe", str(out), *extra], timeout_s, run_dir / "logs" / "probe.log",
                        result=out, module="core.toolchild")
    if outcome.payload is None:
        raise RuntimeError(f"the device probe failed (exit {outcome.code}); its output:\n{outcome.tail}")
    return outcome.payload


def prebuild(pairs: list[Pair], capability: tuple[int, int]) -> dict[str, Any]:
    """Build every .cu file of the selected chapters in parallel before any child starts,
    so children find cached libraries; a failure here resurfaces in the pair that needs it."""
    from core.cuda import build_many, nvcc_path

    sources = sorted({cu for pair in pairs for cu in pair.baseline.parent.glob("*.cu")})
    if not sources or nvcc_path() is None:
        return {"files": len(sources), "seconds": 0.0, "errors": {}}
    started = time.perf_counter()
    built = build_many(sources, capability)
    errors = {f"{p.parent.name}/{p.name}": str(r) for p, r in built.items() if isinstance(r, Exception)}
    return {"files": len(sources), "seconds": round(time.perf_counter() - started, 2), "errors": errors}


PRECOMPILE_NOTE_S = 20.0  # seconds between the precompile phase's progress lines


def run_precompile(selection: list[tuple[Pair, list[Example]]], options: RunOptions,
                   run_dir: Path, listener: Listener) -> dict[str, Any]:
    """The compiling sides of `selection`, compiled in parallel into the run's caches."""
    jobs = precompile.jobs_for(selection, smoke=options.mode == "smoke")
    if not jobs:
        return {}
    examples = {pair.id: chosen for pair, chosen in selection}

    def spec_for(pair: Pair) -> Path:
        path = run_dir / "logs" / f"{_safe(pair)}.spec.json"
        path.write_text(json.dumps(pair_spec(pair, examples[pair.id], options).to_dict(), indent=2))
        return path
    parallel = precompile.parallelism()
    listener(Note(f"precompiling {len(jobs)} sides that compile (torch.compile, Triton), "
                  f"{parallel} at a time; --no-precompile skips this ..."))
    started, last_note = time.perf_counter(), [time.perf_counter()]

    def progress(finished: int, total: int) -> None:  # a line every ~20 s, not one per side
        now = time.perf_counter()
        if finished < total and now - last_note[0] >= PRECOMPILE_NOTE_S:
            last_note[0] = now
            listener(Note(f"  precompiled {finished} of {total} sides ({now - started:.0f} s)"))
    done = precompile.precompile(jobs, spec_for, run_dir / "logs", parallel, progress=progress)
    failed = f"; {len(done.failed)} failed here and compile in their own pair: " + \
        "; ".join(done.failed) if done.failed else ""
    slowest = ", ".join(f"{side} {seconds:.0f} s" for side, seconds in done.slowest())
    listener(Note(f"precompiled {done.sides - len(done.failed)} of {done.sides} sides in "
                  f"{done.seconds:.0f} s (longest: {slowest}){failed}"))
    return done.to_dict()


def side_by_side_jobs(options: RunOptions, info: dict[str, Any]) -> int:
    """Pairs at a time: several only in a smoke run without profiling (core.side_by_side);
    by default only on a GPU, where a CPU-only machine's pairs would share its few cores."""
    if options.mode != "smoke" or options.profile != "none":
        return 1
    if options.jobs is not None:
        return max(1, options.jobs)
    return side_by_side.default_jobs() if "capability" in info else 1


Queued = tuple[int, Pair, list[Example]]  # (position in the selection, pair, its examples)


def run_side_by_side(queue: list[Queued], total: int, jobs: int,
                     measure: Callable[[Pair, list[Example], dict[str, str]], PairResult],
                     keep: Callable[[int, PairResult], None], listener: Listener) -> list[Queued]:
    """A smoke run's pairs `jobs` at a time, those that compile first (they take longest).
    Returns what runs one at a time after them: pairs that run as several ranks (they take
    every GPU), and pairs that failed beside others (their result is not kept)."""
    several = [q for q in queue if precompile.runs_as_ranks(q[1])]
    alone = [q for q in queue if q not in several]
    compiling = {job.pair.id for job in precompile.jobs_for([(p, e) for _, p, e in alone], smoke=True)}
    alone.sort(key=lambda q: (q[1].id not in compiling, q[0]))
    listener(Note(f"smoke: {len(alone)} pairs, {jobs} at a time, each in its own process; a pair "
                  f"that fails beside others runs again alone at the end (--jobs 1: one by one)"))

    def finished(q: Queued, result: PairResult) -> None:
        listener(PairStarted(q[0], total, q[1].id))  # its line goes right above its result
        keep(q[0], result)
    env = side_by_side.child_env(jobs)
    failed = side_by_side.run(alone, lambda q: measure(q[1], q[2], env), finished, jobs, env)
    for q, result in failed:
        listener(Note(f"{q[1].id} failed beside other pairs; it runs again alone at the end"))
    return sorted(several + [q for q, _ in failed], key=lambda q: q[0])


def pair_timeout(pair: Pair, default: float) -> float:
    """`TIMEOUT_S = <number>` at the top level of the baseline file overrides the default.

    Read with `ast`, not by importing, so a broken file cannot take the parent down."""
    try:
        tree = ast.parse(pair.baseline.read_text())
    except (OSError, SyntaxError, ValueError):
        return default
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "TIMEOUT_S"
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, (int, float)) and node.value.value > 0):
            return float(node.value.value)
    return default


def pair_spec(pair: Pair, examples: list[Example], options: RunOptions,
              floors: dict[str, Floor] | None = None, shared_gpu: bool = False) -> PairSpec:
    """What the pair's child is asked to run (written as its SPEC.json)."""
    return PairSpec(pair=pair.id, baseline=str(pair.baseline), seed=options.seed,
                    iterations=options.iterations, warmup=options.warmup, mode=options.mode,
                    examples=[VariantSpec(e.name, e.id, str(e.optimized)) for e in examples],
                    floors=floors or {}, shared_gpu=shared_gpu, gpus=options.gpus)


def _safe(pair: Pair) -> str:
    return pair.id.replace(":", "__")


def _failed(pair: Pair, examples: list[Example], reason: str, duration_s: float) -> PairResult:
    result = PairResult(pair=pair.id, duration_s=round(duration_s, 3), examples=[
        ExampleResult(name=e.name, id=e.id, file=f"{e.chapter}/{e.optimized.name}") for e in examples])
    return result.fail_all(reason)


def gate_floors(examples: list[Example], stored: dict[str, dict[str, Any]],
                options: RunOptions) -> dict[str, Floor]:
    """What a gate run hands the child so its timing, replays or cold starts may stop once
    every verdict is known (core.decided): each variant's floor, by the goal and the
    declarations it is stored with (core.goals). Empty when the run stores results
    (--update-expectations wants the full precision), smoke or fixed-count runs, or when a
    variant has no floor (it would not be decided anyway)."""
    if options.update_expectations or options.mode != "full" or options.iterations:
        return {}
    found = {}
    for e in examples:
        entry = stored.get(e.name)
        goal = goals.GOALS.get((entry or {}).get("goal", goals.DEFAULT))
        floor = goal.floor(entry) if entry and goal else None
        if floor is None:
            return {}
        found[e.name] = floor
    return found


def run_pair(pair: Pair, examples: list[Example], options: RunOptions, run_dir: Path,
             floors: dict[str, Floor] | None = None,
             env: dict[str, str] | None = None, shared_gpu: bool = False) -> PairResult:
    """The pair in a child process of its own (`env`: variables set on top of the usual ones;
    such a child forks only from a fork server started with the same ones). `shared_gpu`:
    other pairs run beside it (core.side_by_side; PairSpec.shared_gpu)."""
    safe = _safe(pair)
    spec_path, out_path = run_dir / "logs" / f"{safe}.spec.json", run_dir / "logs" / f"{safe}.result.json"
    spec = pair_spec(pair, examples, options, floors, shared_gpu)
    spec_path.write_text(json.dumps(spec.to_dict(), indent=2))
    started = time.perf_counter()
    timeout_s = pair_timeout(pair, options.timeout_s)
    outcome = run_child([str(spec_path), str(out_path)], timeout_s, run_dir / "logs" / f"{safe}.log",
                        pair.baseline.parent.parent, result=out_path, env=env)
    if outcome.payload is not None:
        return PairResult.from_dict(outcome.payload)
    if outcome.problem:
        reason = f"{pair.chapter}/{pair.baseline.name}: {outcome.problem}"
    elif outcome.code is None:
        reason = (f"timed out after {timeout_s:g} s (raise it with --timeout, or TIMEOUT_S in "
                  f"{pair.chapter}/{pair.baseline.name})")
        log = run_dir / "logs" / f"{safe}.log"
        where = frames_in(stacks_of(log), pair.baseline.parent)
        if where:
            reason += (f"; the pair's code was at {', '.join(where)} (every process's stacks: "
                       f"{stacks_dir(log)})")
    else:
        reason = f"child process exited with code {outcome.code} without a result"
    tail = outcome.tail
    reason += f"; last output:\n{tail[-1500:].strip()}" if tail.strip() else ""
    failed = _failed(pair, examples, reason, time.perf_counter() - started)
    failed.ranks = ranks_in_log(run_dir / "logs" / f"{safe}.log")  # its block: `4x_h200`, not `h200`
    return failed


def measure_outside(pair: Pair, pair_result: PairResult, options: RunOptions, run_dir: Path,
                    floors: dict[str, Floor], listener: Listener) -> None:
    """What the measured variants' goals measure in processes of their own after the pair's
    child (core.goals.Goal.outside: cold starts); nothing in a smoke run."""
    if options.mode == "smoke":
        return
    measured = {ex.name: ex.goal for ex in pair_result.examples if ex.measured}
    job = goals.Outside(pair_result, run_dir / "logs" / f"{_safe(pair)}.spec.json",
                        pair.baseline.parent.parent, run_dir / "logs", _safe(pair), options.timeout_s,
                        floors, lambda line: listener(Note(line)), run_child)
    for goal, names in goals.by_goal(measured).items():
        goal.outside(job, names)


def profile_pair(pair: Pair, examples: list[Example], pair_result: PairResult,
                 options: RunOptions, run_dir: Path) -> dict[str, Any]:
    """Profiling runs of the verified sides, after (and apart from) the timing run."""
    from core import profiling

    verified = {ex.name for ex in pair_result.examples if ex.status == "ok"}
    examples = [e for e in examples if e.name in verified]
    if not examples:
        return {"mode": options.profile, "status": "skipped", "reason": "no verified variant"}
    out_dir = run_dir / "profiles" / _safe(pair)
    out_dir.mkdir(parents=True, exist_ok=True)
    spec_path = out_dir / "spec.json"
    spec_path.write_text(json.dumps(pair_spec(pair, examples, options).to_dict(), indent=2))
    root = pair.baseline.parent.parent
    report: dict[str, Any] = {"mode": options.profile, "dir": str(out_dir)}
    if options.profile == "memory":
        found = out_dir / "memory.json"
        outcome = run_child(["--profile-memory", str(spec_path), str(found)],
                            options.timeout_s, out_dir / "memory.log", root, result=found,
                            module="core.toolchild")
        if outcome.payload is None:
            return {**report, "status": "failed",
                    "reason": (outcome.problem or "") + outcome.tail[-1500:]}
        return {**report, **outcome.payload}
    minimal = out_dir / "minimal.json"
    outcome = run_child(["--profile-minimal", str(spec_path), str(minimal)],
                        options.timeout_s, out_dir / "minimal.log", root, result=minimal,
                        module="core.toolchild")
    if outcome.payload is not None:
        report["sides"] = outcome.payload
    else:
        report["minimal_error"] = (outcome.problem or "") + outcome.tail[-1500:]
    if options.profile != "deep":
        return report
    sides = ["baseline", *(e.name for e in examples)]
    for tool in ("ncu", "nsys"):
        path = profiling.which(tool)
        if path is None:
            report[tool] = {"status": "skipped", "reason": f"{tool} not found on PATH or in the CUDA toolkit"}
            continue
        report[tool] = {"status": "ok", "sides": {}}
        for side in sides:
            child_args = ["--profile-side", str(spec_path), side]
            rep = out_dir / f"{side}.{'ncu-rep' if tool == 'ncu' else 'nsys-rep'}"
            if tool == "ncu":
                command = profiling.ncu_command(rep, side, child_args, ncu=path,
                                                replay_mode=options.ncu_replay_mode,
                                                clock_control=options.ncu_clock_control)
            else:
                command = profiling.nsys_command(rep.with_suffix(""), child_args, nsys=path)
            code, tail = profiling.run_tool(command, options.timeout_s, out_dir / f"{side}.{tool}.log",
                                            child_env(root), REPO_ROOT)
            entry: dict[str, Any] = {"report": str(rep), "exit_code": code}
            if code != 0 or not rep.exists():
                entry["error"] = tail[-1500:]
            elif tool == "ncu":
                _, csv_text = profiling.run_tool(profiling.ncu_summary_command(rep, path),
                                                 options.timeout_s, out_dir / f"{side}.ncu.csv",
                                                 child_env(root), REPO_ROOT)
                entry["kernels"] = profiling.parse_ncu_csv(
                    (out_dir / f"{side}.ncu.csv").read_text())
            report[tool]["sides"][side] = entry
    return report


def annotate(result: PairResult, pair: Pair, ceilings: dict[str, float],
             stored: dict[str, dict[str, Any]], fingerprint: dict[str, Any] | None = None) -> None:
    """Add rates, % of ceiling and the expectation verdict to each measured example: its
    goal's gate (core.goals), then the rules it is stored under (core.declarations), and
    whether a host-paced result's entry came from another host."""
    if result.baseline is not None:
        result.baseline.rates = rates(result.baseline.workload, result.baseline.median_ms, ceilings)
    for ex in result.examples:
        ex.chapter, ex.stem = pair.chapter, pair.stem
        ex.teaching = ex.teaching or result.teaching
        if not ex.measured:
            continue
        ex.baseline = result.baseline
        ex.timing.rates = rates(ex.timing.workload, ex.timing.median_ms, ceilings)
        entry = stored.get(ex.name)
        ex.expectation = goals.goal_of(ex.goal).gate(ex, entry, result)
        ex.other_host = expect.other_host(ex, entry, fingerprint or {})
        changed = rules_changed(ex, entry)
        if changed:
            ex.expectation = changed
        elif ex.teaching and ex.expectation.status in ("regression", "inconclusive"):
            # the book's deliberately naive example: its speedup is the lesson, not a result
            ex.expectation = GateResult("teaching", f"not gated (teaching pair): "
                                        f"{ex.expectation.message}",
                                        ex.expectation.stored_speedup, ex.expectation.floor)


def expectation_entry(ex: ExampleResult, fingerprint: dict[str, Any], pair_s: float = 0.0) -> dict[str, Any]:
    keep = ("device", "compute_capability", "driver", "cuda_runtime", "torch", "nvcc", "git_commit",
            "sm_count", "memory_gib", "cpu", "cpu_cores")
    return {
        **goals.goal_of(ex.goal).entry(ex),
        **({"cpu_bound": ex.cpu_bound} if ex.cpu_bound else {}),
        **({"simulated": ex.simulated} if ex.simulated else {}),  # a stored number says it
        "declarations": ex.declarations.to_dict(),
        "speedup": round(ex.speedup, 4),
        "speedup_ci": [round(x, 4) for x in ex.speedup_ci],
        "baseline_ms": round(ex.baseline_ms, 6),
        "optimized_ms": round(ex.optimized_ms, 6),
        "samples": {"baseline": ex.baseline.stats.n, "optimized": ex.timing.stats.n},
        "pair_s": round(pair_s, 1),  # the whole pair's run, every side (core.report.PAIR_BUDGET_S)
        "optimized_rates": {k: (round(v, 3) if isinstance(v, float) else v)
                            for k, v in ex.timing.rates.to_dict().items()},
        "provenance": {**{k: fingerprint.get(k) for k in keep},
                       "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")},
    }


def run_suite(selection: list[tuple[Pair, list[Example]]], options: RunOptions,
              listener: Listener = lambda event: None) -> RunRecord:
    """Run every selected pair; results stream to results.jsonl as each finishes."""
    broken: dict[Path, str] = {}  # malformed expectations files: this machine's stop the run
    for chapter_dir in sorted({pair.baseline.parent for pair, _ in selection}):
        for path in sorted(chapter_dir.glob("expectations_*.json")):
            try:
                expect.load(path)
            except expect.ExpectationsError as exc:
                broken[path] = str(exc)
    started = time.perf_counter()
    chosen = run_choices(selection, options)
    if options.resume:
        check_resume(options.resume, chosen)
    finished = load_finished(options.resume) if options.resume else {}
    # absolute: the pairs' children run in the repository, not in the caller's directory
    run_dir = Path(options.resume).resolve() if options.resume else make_run_dir(
        Path(options.output_dir).resolve())
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    atomic.write_text(run_dir / "run.json", json.dumps(chosen, indent=2))
    listener(RunStarted(run_dir, len(selection)))
    # torch imported once per run, and the compiler front end where a pair compiles: the probe,
    # the requirements check and each pair's fresh child are forked from one server
    compiling = bool(precompile.jobs_for([(p, e) for p, e in selection if p.id not in finished],
                                         smoke=True))
    with fork_server(preload=compiling):
        return _run_suite(selection, options, listener, run_dir, chosen, finished, started, broken)


def _stop_on_broken(broken: dict[Path, str], key: str, run_dir: Path, resumed: bool,
                    listener: Listener) -> None:
    """A malformed expectations file of this machine's key stops the run before any pair (the
    run directory goes too, unless resumed); another machine's is a note, and the run goes on."""
    for path, why in broken.items():
        file_key = path.stem[len("expectations_"):]
        if file_key == key or file_key.endswith(f"x_{key}"):
            if not resumed:
                shutil.rmtree(run_dir, ignore_errors=True)
            raise expect.ExpectationsError(why)
        listener(Note(f"{why} (not this machine's expectations, {key}: the run goes on; a run "
                      f"on {file_key} would stop)"))


def _use_calibration(key: str, listener: Listener) -> None:
    """The gate's tolerances for this GPU model, where A/A runs measured them (core.calibration)."""
    try:
        measured = calibration.activate(key)
    except ValueError as exc:
        calibration.activate("")  # the defaults
        listener(Note(f"{exc}; the gate uses its default tolerances"))
        return
    if measured:
        shown = ", ".join(f"{name} {f.tolerance:.1%}" for name, f in measured.families.items()
                          if f.tolerance is not None)
        listener(Note(f"gate tolerances measured by A/A runs (calibration/{measured.key}.json): "
                      f"{shown or 'none (too few ratios)'}"))


def _run_suite(selection: list[tuple[Pair, list[Example]]], options: RunOptions,
               listener: Listener, run_dir: Path, chosen: dict[str, Any],
               finished: dict[str, PairResult], started: float,
               broken: dict[Path, str]) -> RunRecord:
    info = probe(run_dir, gpus=options.gpus)
    fingerprint, ceilings = info["fingerprint"], info.get("ceilings", {})
    if info.get("ceiling_conditions"):  # clocks and throttle reasons each ceiling ran at
        fingerprint["ceiling_conditions"] = info["ceiling_conditions"]
    key = fingerprint.get("hardware_key", "cpu")
    _use_calibration(key, listener)
    _stop_on_broken(broken, key, run_dir, bool(options.resume), listener)
    record = RunRecord(run_dir, fingerprint, ceilings, options=chosen)
    stored: dict[Path, dict[str, dict[str, Any]]] = {}  # expectations files read so far

    def stored_for(pair: Pair, result: PairResult) -> dict[str, dict[str, Any]]:
        path = expect.path_for(pair.baseline.parent, pair_key(key, result))
        if path not in stored:
            stored[path] = expect.load(path)
        return stored[path]
    for pair, _ in selection:  # a malformed file stops the run before any pair runs
        stored_for(pair, PairResult(pair=pair.id))
        for multi in pair.baseline.parent.glob(f"expectations_*x_{key}.json"):
            stored.setdefault(multi, expect.load(multi))
    pending = [(pair, examples) for pair, examples in selection if pair.id not in finished]
    checked = (precheck.check(pending, run_dir, options.timeout_s) if len(pending) > 1
               else precheck.Precheck())  # one pair: its own child decides, as cheaply
    if checked.problem:
        listener(Note(f"requirements check: {checked.problem}; the remaining pairs check their "
                      f"own requirements"))
    if "capability" in info:
        record.builds = prebuild([p for p, _ in selection if p.id not in checked.skipped],
                                 tuple(info["capability"]))
        if record.builds["files"]:
            listener(Note(f"built {record.builds['files']} CUDA files in {record.builds['seconds']} s"))
    serial = [(i, p, e) for i, (p, e) in enumerate(selection, 1)]
    jobs = side_by_side_jobs(options, info)
    if options.precompile and "capability" in info and jobs == 1:
        record.precompile = run_precompile(
            [(p, e) for p, e in pending if p.id not in checked.skipped], options, run_dir, listener)
    stream = run_dir / "results.jsonl"
    total = len(selection)
    order = {pair.id: i for i, (pair, _) in enumerate(selection)}

    def measure(pair: Pair, examples: list[Example], env: dict[str, str] | None = None) -> PairResult:
        """One pair: its child (or the skip decided without one), then what follows it."""
        began = time.perf_counter()
        if pair.id in checked.skipped:  # its requirements are not met here: no child
            pair_result = checked.skipped[pair.id]
        else:
            floors = gate_floors(examples, stored_for(pair, PairResult(pair=pair.id)), options)
            # only pairs run side by side get an environment of their own (their core share)
            pair_result = run_pair(pair, examples, options, run_dir, floors, env=env,
                                   shared_gpu=env is not None)
            measure_outside(pair, pair_result, options, run_dir, floors, listener)
        annotate(pair_result, pair, ceilings, stored_for(pair, pair_result), fingerprint)
        if options.mode == "smoke":
            for ex in pair_result.examples:
                ex.expectation = SMOKE_GATE if ex.measured else ex.expectation
        if options.profile != "none" and pair_result.status == "ok" and pair_result.ranks > 1:
            pair_result.profile = {"mode": options.profile, "status": "skipped", "reason":
                                   "profiling runs one process; multi-GPU pairs are not "
                                   "profiled yet"}
        elif options.profile != "none" and pair_result.status == "ok":
            listener(Note(f"      profiling ({options.profile}) ..."))
            pair_result.profile = profile_pair(pair, examples, pair_result, options, run_dir)
        # what the pair cost this run: its child, plus cold starts and profiling
        pair_result.duration_s = round(time.perf_counter() - began, 3)
        return pair_result

    def keep(index: int, pair_result: PairResult) -> None:
        record.pairs.append(pair_result)
        with open(stream, "a") as handle:
            handle.write(json.dumps(pair_result.to_dict()) + "\n")
        results_csv.write(record, run_dir / "results.csv")
        listener(PairFinished(index, total, pair_result))

    try:
        for index, (pair, _) in enumerate(selection, 1):
            if pair.id in finished:
                record.pairs.append(finished[pair.id])
                listener(PairFinished(index, total, finished[pair.id], kept=True))
        serial = [(i, p, e) for i, p, e in serial if p.id not in finished]
        if jobs > 1:
            serial = run_side_by_side(serial, total, jobs, measure, keep, listener)
        for index, pair, examples in serial:
            listener(PairStarted(index, total, pair.id))
            keep(index, measure(pair, examples))
    except KeyboardInterrupt:
        record.interrupted = True
        listener(Note("interrupted: keeping the pairs measured so far"
                      + (" and storing their results (--update-expectations)"
                         if options.update_expectations else "")))
    record.pairs.sort(key=lambda result: order.get(result.pair, len(order)))
    if options.update_expectations:
        # only the pairs that finished (an interrupted one never reached record.pairs): what
        # a run measured is stored even when it is cut short, and --resume stores the rest
        write_expectations(record, selection, key)
    record.wall_s = round(time.perf_counter() - started, 1)
    atomic.write_text(run_dir / "results.json", json.dumps(record.to_dict(), indent=2))
    results_csv.write(record, run_dir / "results.csv")
    write_reports(record, run_dir)
    return record


class ResumeError(ValueError):
    """--resume with another selection or other options than the run it continues."""


def run_choices(selection: list[tuple[Pair, list[Example]]], options: RunOptions) -> dict[str, Any]:
    """What a run measures and how: written to run.json, checked by --resume."""
    return {"targets": [e.id for _, examples in selection for e in examples],
            "iterations": options.iterations, "warmup": options.warmup, "seed": options.seed,
            "profile": options.profile, "update_expectations": options.update_expectations,
            "mode": options.mode, "gpus": options.gpus}


def check_resume(run_dir: Path, chosen: dict[str, Any]) -> None:
    """Refuse to resume `run_dir` with another selection or other options: the finished pairs
    and the new ones would not belong to one run (and results.json would be overwritten)."""
    path = Path(run_dir) / "run.json"
    if not path.exists():
        raise ResumeError(f"--resume {run_dir}: no run.json there (the run was started by an "
                          f"older aisp); start a new run instead")
    before = {"mode": "full", **json.loads(path.read_text())}  # runs from before --mode were full
    differ = [key for key in chosen if before.get(key) != chosen[key]]
    if differ:
        shown = "; ".join(f"{key}: was {before.get(key)!r}, now {chosen[key]!r}" for key in differ
                          if key != "targets")
        if "targets" in differ:
            shown = (f"targets: it ran {', '.join(before.get('targets') or [])}"
                     + (f"; {shown}" if shown else ""))
        raise ResumeError(f"--resume {run_dir}: that run was started with other targets or "
                          f"options ({shown}); resume it with the same ones, or start a new run")


def load_finished(run_dir: Path) -> dict[str, PairResult]:
    """Pairs already measured in `run_dir` (its results.jsonl), by pair id, for --resume."""
    stream = Path(run_dir) / "results.jsonl"
    if not stream.exists():
        raise FileNotFoundError(f"{stream}: not found; --resume takes a run directory of an "
                                f"earlier `bench run` (it holds results.jsonl)")
    finished = {}
    for line in stream.read_text().splitlines():
        try:
            result = PairResult.from_dict(json.loads(line))
        except (json.JSONDecodeError, KeyError, TypeError):
            continue  # a line cut short by a crash: that pair runs again
        finished[result.pair] = result
    return finished


def slower_undeclared(ex: ExampleResult) -> bool:
    """A variant whose gated ratio (speedup, memory saved, goodput, ...) is below 1x, or
    whose speedup interval reaches below 1x (parity: ch06 autotuning stored 1.00x [1.00-1.00]
    on an H100, ch04 symmetric_memory 1.03x on 2 GPUs then 0.998x on a fresh pair), without
    a declared negative result: stored, its gate floor of 1.0x would fail later runs whenever
    the noise falls the other way, and it would present no gain as an optimization."""
    goal = goals.goal_of(ex.goal)
    value, lowest = goal.ratio(ex), goal.lowest(ex)
    if ex.negative_result or value is None:
        return False
    return value < 1.0 or (lowest is not None and lowest < 1.0)


def write_expectations(record: RunRecord, selection: list[tuple[Pair, list[Example]]], key: str) -> None:
    """Store every example that verified and was timed; failed and noisy results never are."""
    by_file: dict[tuple[Path, str], dict[str, dict[str, Any]]] = {}
    pairs = {pair.id: pair for pair, _ in selection}
    for pair_result in record.pairs:
        pair = pairs.get(pair_result.pair)
        if pair is None:
            continue
        entries = by_file.setdefault((pair.baseline.parent, pair_key(key, pair_result)), {})
        for ex in pair_result.examples:
            if ex.measured and ex.noisy:
                record.expectation_skips.append(f"{ex.id}: not stored, {ex.noisy}")
            elif ex.measured and slower_undeclared(ex):
                goal = goals.goal_of(ex.goal)
                measure, value = goal.field, goal.ratio(ex)
                what = ("slower" if goal.gates_time else f"below 1x in its {measure}") if value < 1.0 \
                    else f"at parity (its interval starts at {goal.lowest(ex):.3f})"
                record.expectation_skips.append(
                    f"{ex.id}: not stored, the optimized side is {what} ({value:.2f}x) and "
                    f"{ex.file} declares no negative_result: a stored {measure} at or below 1x "
                    f"gates every later run at a 1.0x floor, which it fails whenever its measure "
                    f"lands below 1x; fix the optimized side, measure it where the technique "
                    f"pays, or declare negative_result = \"why\" (and say it in the README)")
            elif ex.measured:
                entries[ex.name] = expectation_entry(ex, record.fingerprint, pair_result.duration_s)
    for (chapter_dir, file_key), entries in by_file.items():
        if entries:
            path = expect.path_for(chapter_dir, file_key)
            expect.update(path, file_key, entries)
            record.expectation_updates.append(f"{chapter_dir.name}/{path.name}")
    if record.expectation_updates:  # the READMEs' generated tables follow the files they are made from
        root = next(iter(by_file))[0].parent
        record.expectation_updates += [f"{path.relative_to(root)} (generated tables)"
                                       for path in front_page.write_all(root)]
