"""Runs one pair (a baseline and its optimized variants) inside a child process.

    python -m core.child SPEC.json RESULT.json               # a pair; SPEC written by core.runner
    python -m core.child --probe RESULT.json                 # fingerprint + same-run ceilings
    python -m core.child --profile-minimal SPEC.json OUT.json  # traces (core.profiling)
    python -m core.child --profile-side SPEC.json SIDE       # one iteration, for ncu/nsys
    python -m core.child --profile-memory SPEC.json OUT.json   # allocator snapshots (core.profiling)
    python -m core.child --load-test SPEC.json SIDE SECONDS OUT.json  # tools load-test (core.goodput)
    python -m core.child --cold-start SPEC.json SIDE OUT.json  # goal compile_time (core.compile_time)

The token that signs the result comes on stdin (core.process). Steps for a pair:
1. load every side; a variant must share the baseline's make_inputs (one builder per stem);
   set every side up once, with the same weight seed. A pair with a goal "memory" variant
   then has each side's device-memory footprint measured (core.memory).
2. verify on two fresh seeds: inputs checksummed around each call and never returned
   (unless `inplace`), the baseline checked against `reference()`, every variant against the
   baseline, and each side's output must change with the seed. `stateful` sides are set up
   afresh for each verification call.
3. time the verified sides in interleaved rounds. Before each round the inputs are refilled
   in place with values from a fresh seed; in every batch the output of one sample, at a
   position drawn at random, is kept and compared after the round with the baseline's
   output on the same values (computed on a fresh copy of the inputs). A result cached
   across calls (keyed on anything), or prepared in setup(), fails here.
4. after timing: the escape check per side, the Guard (timing and harness functions
   unreplaced), and `stateful` sides verified once more from a fresh setup.
Seeds are drawn at random by the harness (a pair cannot know them) and recorded.
"""
from __future__ import annotations

import json
import os
import random
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch  # noqa: F401 - imported before any pair module, for the Guard's snapshot

from core import timing  # binds the timing functions before any pair module is imported
from core import expectations as expect
from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, option, shares_builder
from core.decided import Floor, decided, median_bounds, round_goal_floor, rounds_decided
from core.integrity import Guard, alias_problem, escaped_work, mutation_problem
from core.memory import CudaMeter, Footprint, footprint, largest, prime_libraries
from core.pairfile import PairError, load_benchmark, relative, unmet_requirement
from core.process import deliver, read_token
from core.ranks import Ranks
from core.record import (BatchCheck, ExampleResult, PairResult, SideResult,
                         Verification)
from core.stats import speedup_interval, summarize
from core.verify import compare, flatten, outputs_equal, snapshot, snapshot_into

GUARD: Guard | None = None  # built in main(), before any pair module is imported
DISTRIBUTED_WARMUP = 5  # warm-up calls per side when ranks must call run() equally often
DISTRIBUTED_ROUND_S = 0.1  # GPU time per side per round for multi-GPU pairs (0.025 s otherwise)
SIMULATED_COST_SEEDS = 3  # goal simulated_cost: input seeds each side prices its modelled work on


@dataclass
class PairSpec:
    """What the runner asks a child to run (written as SPEC.json)."""

    pair: str
    baseline: str  # path of baseline_<stem>.py
    examples: list[dict[str, str]]  # {"name", "id", "path"} per optimized variant
    seed: int = 0  # the weight seed (setup); input seeds are drawn at random
    iterations: int | None = None
    warmup: int | None = None
    mode: str = "full"  # full | smoke (RunOptions.mode)
    # a gate run: each variant's stored entry ({"speedup", optional "tolerance", and for another
    # goal "goal" and its gated ratio}), so timing or replays may stop once every verdict is
    # known (core.decided); empty otherwise
    gate_entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    # a smoke run side by side (core.side_by_side): other pairs' kernels share the GPU, and the
    # escaped-work check (a batch's wall time against its samples) cannot tell their time from
    # work that escaped the timed stream, so it is off; no time a smoke run reports is a result
    shared_gpu: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


class SideError(RuntimeError):
    """One side broke a rule or raised; the message names what happened."""


def _short_traceback(exc: BaseException) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return "".join(lines[-6:]).strip()


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        timing._synchronize()


def _tolerance(bench: Benchmark, baseline: Benchmark) -> Tolerance | None:
    tol = option(bench, "tolerance", None) or option(baseline, "tolerance", None)
    return Tolerance(*tol) if isinstance(tol, (tuple, list)) else tol


def _new_seed(rng: random.Random) -> int:
    return rng.randrange(1, 2**31 - 1)


class PairSession:
    """One pair inside the child: its sides, its inputs, its result."""

    def __init__(self, spec: PairSpec, device: str, rng: random.Random, ranks: Ranks | None = None):
        self.spec, self.device = spec, device
        self.ranks = ranks or Ranks()
        # every rank draws the same seeds and capture positions: one seed, rank 0's
        self.rng = random.Random(self.ranks.from_rank0(rng.randrange(2**63))) if self.ranks.distributed else rng
        self.result = PairResult(pair=spec.pair, device=device, ranks=self.ranks.world)
        self.examples = {e["name"]: ExampleResult(name=e["name"], id=e["id"], file=relative(e["path"]))
                         for e in spec.examples}
        self.result.examples = list(self.examples.values())
        self.baseline: Benchmark | None = None
        self.sides: dict[str, Benchmark] = {}  # variants still in the race
        self.loaded: list[Benchmark] = []  # every side that was set up (torn down at the end)
        self.integrity = self.result.integrity
        self.file = relative(spec.baseline)
        self.graph_calls: dict[str, int] = {}  # side -> run() calls per replayed CUDA graph
        self.rank_medians: dict[str, list[float]] = {}  # side -> each rank's median (multi-GPU)
        self.setup_bytes: dict[str, int] = {}  # side -> device bytes its first setup() kept
        self.footprints: dict[str, Footprint] = {}  # side -> its memory (goal "memory" pairs)
        self.setup_s: dict[str, float] = {}  # side -> its first setup()'s seconds
        self.answers_here = True  # this rank's outputs are verified (rank0_output: rank 0 only)

    # --- bookkeeping -------------------------------------------------------------------
    def fail(self, name: str, reason: str, status: str = "failed") -> None:
        self.examples[name].fail(reason, status)
        self.sides.pop(name, None)

    def agree(self) -> None:
        """Every rank ends with the same variants failed: a check one rank failed fails the
        variant on all (the message names the rank). One rank alone: nothing to do."""
        if not self.ranks.distributed:
            return
        mine = {name: (ex.status, ex.reason) for name, ex in self.examples.items() if ex.status != "ok"}
        for rank, failed in enumerate(self.ranks.all(mine)):
            for name, (status, reason) in failed.items():
                if self.examples[name].status == "ok":
                    self.fail(name, f"rank {rank}: {reason}", status)

    def name_of(self, name: str) -> str:
        return self.file if name == "baseline" else self.examples[name].file

    def bench(self, name: str) -> Benchmark:
        return self.baseline if name == "baseline" else self.sides[name]

    def check_guard(self, when: str, blame: str | None = None) -> None:
        """A replaced timing or harness function fails the whole pair: the replacement stays
        in this process and could bend every side's numbers, not only the culprit's."""
        problem = GUARD.problem() if GUARD else None
        if problem:
            who = self.name_of(blame) if blame else self.spec.pair
            raise PairError(f"{who}: {problem} ({when})")

    # --- 1. load and set up ------------------------------------------------------------
    def load(self) -> bool:
        """Load every side; False when the pair cannot run at all (result says why)."""
        try:
            self.baseline = load_benchmark(Path(self.spec.baseline))
        except PairError as exc:
            self.result.fail_all(str(exc))
            return False
        self.check_guard("while importing", "baseline")
        self.result.teaching = bool(option(self.baseline, "teaching", False))
        self.answers_here = not (option(self.baseline, "rank0_output", False) and self.ranks.rank)
        why = unmet_requirement(self.baseline, self.device)
        if why:
            self.result.fail_all(f"{self.file}: {why}", "skipped")
            return False
        requires = option(self.baseline, "requires", Requirements())
        if requires.one_process and self.device.startswith("cuda"):
            self.result.ranks = requires.gpus  # one process, several GPUs: stored as `2x_h200`
        for e in self.spec.examples:
            try:
                bench = load_benchmark(Path(e["path"]))
            except PairError as exc:
                self.fail(e["name"], str(exc))
                continue
            why = unmet_requirement(bench, self.device)
            if why:
                self.fail(e["name"], f"{relative(e['path'])}: {why}", "skipped")
                continue
            if not shares_builder(self.baseline, bench):
                self.fail(e["name"], f"{relative(e['path'])}: defines its own make_inputs(); the "
                                     f"sides of a stem share one input builder (define it once "
                                     f"in the stem's common class)")
                continue
            self.sides[e["name"]] = bench
            self.loaded.append(bench)
            self.examples[e["name"]].negative_result = option(bench, "negative_result", "")
            self.examples[e["name"]].goal = option(bench, "goal", "speed")
            self.examples[e["name"]].cpu_bound = (option(bench, "cpu_bound", "")
                                                  or option(self.baseline, "cpu_bound", ""))
            self.examples[e["name"]].simulated = (option(bench, "simulated", "")
                                                  or option(self.baseline, "simulated", ""))
            self.check_guard("while importing", e["name"])
        if self.measures_memory:
            prime_libraries()  # library workspaces are nobody's footprint (core.memory)
        for name in ["baseline", *self.sides]:
            self.setup(name)
        return True

    @property
    def measures_memory(self) -> bool:
        return self.device.startswith("cuda") and any(
            ex.goal == "memory" for name, ex in self.examples.items() if name in self.sides)

    def setup(self, name: str) -> None:
        bench = self.bench(name)
        bench.ctx = BenchContext(seed=self.spec.seed, device=self.device, mode=self.spec.mode)
        cuda = self.device.startswith("cuda")
        before = torch.cuda.memory_allocated() if cuda else 0
        started = time.perf_counter()
        try:
            bench.setup(bench.ctx)
        except Exception as exc:  # noqa: BLE001
            self.side_raised(name, exc, "setup")
        self.setup_s.setdefault(name, time.perf_counter() - started)
        if cuda:
            self.setup_bytes.setdefault(name, torch.cuda.memory_allocated() - before)
        self.check_guard("during setup()", name)

    def measure_memory(self) -> None:
        """Each side's device-memory footprint (core.memory), sides in order on every rank;
        rank 0 keeps the largest of any rank."""
        inputs = self.baseline.make_inputs(_new_seed(self.rng))
        meter = CudaMeter()
        mine: dict[str, Footprint] = {}
        for name in ["baseline", *self.sides]:
            bench = self.bench(name)
            try:
                mine[name] = footprint(lambda: bench.run(inputs), self.setup_bytes.get(name, 0), meter)
            except Exception as exc:  # noqa: BLE001
                self.side_raised(name, exc, "run() (memory measurement)")
            self.check_guard("during run()", name)
        del inputs
        every = self.ranks.all(mine) if self.ranks.distributed else [mine]
        for name in mine:
            self.footprints[name] = largest([f[name] for f in every if name in f])

    def side_raised(self, name: str, exc: BaseException, where: str) -> None:
        why = str(exc) if isinstance(exc, SideError) else (
            f"raised {type(exc).__name__} in {where}:\n{_short_traceback(exc)}")
        if self.ranks.distributed:  # the other ranks may wait in a collective of this call
            self.ranks.abort(f"{self.name_of(name)}: {why}")
        if name == "baseline":
            raise PairError(f"{self.file}: baseline {why}") from exc
        self.fail(name, f"{self.examples[name].file}: {why}")

    # --- 2. verification ---------------------------------------------------------------
    def call_checked(self, name: str, inputs: Any) -> Any:
        """One untimed run() with the input rules checked; a private copy of its output."""
        from core.inputs import aliased, changed, clone, refill

        bench = self.bench(name)
        if option(bench, "stateful", False):
            bench.setup(bench.ctx)  # verified from a fresh state
        inplace = option(bench, "inplace", False)
        given = clone(inputs) if inplace else inputs
        if not self.answers_here:  # rank0_output: this rank's run() returns no answer
            bench.run(given)
            _sync(self.device)
            return None
        before = None if inplace else clone(inputs)
        out = bench.run(given)
        _sync(self.device)
        try:
            outputs = flatten(out)
        except TypeError as exc:
            raise SideError(str(exc)) from exc
        if before is not None:
            problem = (alias_problem(aliased(outputs, given))
                       or mutation_problem(changed(before, given)))
            if problem:
                refill(given, before)  # the other sides get the values they are owed
                raise SideError(problem)
        return snapshot(out)

    def verify(self, seed: int, when: str = "") -> dict[str, Any]:
        """Every side on the inputs of `seed`; variants must match the baseline there."""
        from core.inputs import clone

        inputs = self.baseline.make_inputs(seed)
        outs: dict[str, Any] = {}
        for name in ["baseline", *self.sides]:
            try:
                outs[name] = self.call_checked(name, inputs)
            except Exception as exc:  # noqa: BLE001
                self.side_raised(name, exc, "run()")
            self.check_guard("during run()", name)
        expected = self.baseline.reference(clone(inputs)) if self.answers_here else None
        _sync(self.device)
        if expected is not None:
            tolerance = (option(self.baseline, "reference_tolerance", None)
                         or _tolerance(self.baseline, self.baseline))
            check = compare(expected, outs["baseline"], tolerance, same_dtype=False)
            if not check.ok:
                raise PairError(f"{self.file}: the baseline disagrees with reference() on seed "
                                f"{seed}{when}: {check.message}")
            self.integrity.reference_checked = True
        for name in list(self.sides):
            if self.answers_here and name in outs:
                self.check_output(name, outs["baseline"], outs[name], f" on seed {seed}{when}")
        return outs

    def check_output(self, name: str, expected: Any, actual: Any, where: str) -> bool:
        check = compare(expected, actual, _tolerance(self.sides[name], self.baseline))
        record = self.examples[name].verification or Verification()
        self.examples[name].verification = record
        record.checks += 1
        record.max_abs_err = max(record.max_abs_err, check.max_abs_err)
        record.max_rel_err = max(record.max_rel_err, check.max_rel_err)
        record.tolerance_used = max(record.tolerance_used or 0.0, check.tolerance_used)
        if not check.ok:
            record.ok, record.message = False, check.message
            self.fail(name, f"verification failed{where}: {check.message}")
        return check.ok

    def check_seed_sensitivity(self, first: dict[str, Any], second: dict[str, Any],
                               seeds: tuple[int, int]) -> None:
        if not self.answers_here:
            return
        for name in ["baseline", *self.sides]:
            bench = self.bench(name)
            if option(bench, "seed_sensitive", True) and outputs_equal(first[name], second[name]):
                why = (f"output is identical for input seeds {seeds[0]} and {seeds[1]}; run() "
                       f"returns a cached result or ignores its inputs")
                if name == "baseline":
                    raise PairError(f"{self.file}: baseline {why}")
                self.fail(name, f"{self.examples[name].file}: {why}")

    # --- 3. timing with timed-output checks --------------------------------------------
    def measure(self) -> None:
        """Time every side; each batch runs on the values of one fresh seed until, just
        before a sample drawn at random, the inputs switch to those of a second seed, and
        that sample's output is kept for check_timed(). A result cached across calls, one
        call late, or computed for other values then differs from the baseline's."""
        from core.inputs import changed, clone, refill

        device = self.device
        names = ["baseline", *self.sides]
        benches = {n: self.bench(n) for n in names}
        inputs = self.baseline.make_inputs(_new_seed(self.rng))  # the tensors every side gets
        self.timed_inputs = inputs
        first, second = clone(inputs), clone(inputs)  # this round's two sets of values
        modes = {option(b, "timing_mode", "hot") for b in benches.values()}
        cold, graph = "cold" in modes, "graph" in modes and device.startswith("cuda")
        flush = timing.L2Flusher() if cold and device.startswith("cuda") else None
        checkable = {n for n in names if not option(benches[n], "stateful", False)}
        if "baseline" not in checkable:
            checkable = set()  # the baseline's state moves on: nothing to compare timed outputs with
        captured: dict[str, Any] = {}
        # one untimed call per side, in the sides' order (not the set's: ranks hash strings
        # differently, and every rank must call the sides' collectives in the same order)
        buffers = {n: self.answer(benches[n].run(inputs)) for n in names if n in checkable}
        _sync(device)

        def side(name: str) -> timing.Timed:
            bench = benches[name]
            given = inputs
            steps = [flush] if flush else []
            if option(bench, "inplace", False):
                given = clone(inputs)  # this side's working copy, refreshed before every call
                steps.append(lambda: refill(given, inputs))
            def before() -> None:
                for step in steps:
                    step()

            def keep(out: Any) -> None:  # into the buffer sized before timing: no allocation
                captured[name] = buffers[name] = (snapshot_into(buffers.get(name), out)
                                                  if self.answers_here else None)
            check = name in checkable
            call, calls = (lambda: bench.run(given)), 1
            if graph:  # every side alike, so the speedup compares GPU time with GPU time
                call, calls = self.graph_call(name, call)
                self.graph_calls[name] = calls
            return timing.Timed(call, before if steps else None, keep if check else None,
                                switch=(lambda: refill(inputs, second)) if check else None,
                                prepare=lambda: refill(inputs, first), calls=calls)

        def before_round(index: int) -> None:
            started = time.perf_counter()
            for values in (first, second):
                fresh = _new_seed(self.rng)
                self.integrity.timed_seeds.append(fresh)
                refill(values, self.baseline.make_inputs(fresh))
            self.integrity.checks_s += time.perf_counter() - started

        def after_batch(name: str, batch: timing.Batch) -> bool:
            """Right after each batch: no work escaped it, and the inputs are as they were
            (a side that breaks either rule is out before the next side is timed)."""
            started = time.perf_counter()
            problem = self.escaped([batch])
            if not problem and not option(benches[name], "inplace", False):
                mutated = changed(second if name in checkable else first, inputs)
                problem = f"{mutation_problem(mutated)} (during timing)" if mutated else None
            self.integrity.checks_s += time.perf_counter() - started
            if problem is None:
                return False
            if name == "baseline":
                raise PairError(f"{self.file}: {problem}")
            self.fail(name, f"{self.examples[name].file}: {problem}")
            return True

        def after_round(index: int) -> set[str]:
            if not captured:
                return set()
            started = time.perf_counter()
            dropped = self.check_timed(second, captured, index)
            captured.clear()
            self.integrity.checks_s += time.perf_counter() - started
            return dropped

        if device.startswith("cuda"):
            self.integrity.launch_gap_ms = timing.launch_gap_ms(device)
        policy = timing.StopPolicy(fixed_samples=self.spec.iterations)
        cap = option(self.baseline, "time_cap_s", None)
        if cap:
            policy.max_time_s = float(cap)
        if all(self.examples[n].goal != "speed" for n in self.sides):
            policy = timing.context_policy(policy)  # the time is context beside the gated goal
        warmup = self.spec.warmup
        if self.ranks.distributed:
            if warmup is None:
                warmup = DISTRIBUTED_WARMUP  # a timed warm-up would call run() unequally often
            # Longer batches: two processes on one host see more scheduling jitter, and the
            # escape check's fixed slack per batch is small (measured on 2xH200: one 1.65 ms
            # hiccup in a 22 ms batch of a DDP step, against ≤0.5% in every other batch)
            policy.round_time_s = DISTRIBUTED_ROUND_S
        started = time.perf_counter()
        sides = {}
        for name in names:
            try:
                sides[name] = side(name)
            except timing.GraphCaptureError as exc:  # the message names the file already
                self.fail(name, str(exc))
        self.agree()  # a capture that failed on one rank leaves the side out on every rank
        sides = {n: t for n, t in sides.items() if n == "baseline" or n in self.sides}
        floors = self.gate_floors()
        measurement = timing.interleaved(
            sides, policy, device, warmup, before_round, after_round, self.rng, after_batch,
            self.ranks if self.ranks.distributed else None,
            decide=(lambda r, got, sizes: decided(r, got, sizes, floors)) if floors else None)
        self.integrity.timing_s = time.perf_counter() - started - self.integrity.checks_s
        self.check_guard("during timing")
        self.result.timing_mode = "graph" if graph else "cold" if cold else "hot"
        self.result.stop_reason, self.result.rounds = measurement.stop_reason, measurement.rounds
        self.result.warmup_calls = measurement.warmup_calls
        self.collect(measurement)

    def gate_floors(self) -> dict[str, Floor]:
        """Each timed variant's floor in a gate run, or {} when any variant has none (nothing
        stored, a declared negative, another goal, or not a plain full run): then the
        ordinary stopping rule decides alone."""
        if (not self.spec.gate_entries or self.spec.mode != "full" or self.spec.iterations
                or self.ranks.distributed or self.result.ranks > 1):
            return {}  # (the runner passed the one-GPU file's entries: not a 2x pair's)
        floors = {}
        for name in self.sides:
            bench, entry = self.bench(name), self.spec.gate_entries.get(name)
            if (entry is None or self.examples[name].goal != "speed"
                    or entry.get("goal", "speed") != "speed" or option(bench, "negative_result", "")):
                return {}
            default = (expect.CPU_BOUND_TOLERANCE if self.examples[name].cpu_bound
                       else expect.DEFAULT_TOLERANCE)  # the variant's, else the baseline's
            tolerance = float(entry.get("tolerance", default))
            floors[name] = Floor(expect.floor_of(float(entry["speedup"]), tolerance),
                                 max(expect.MAX_INTERVAL_RATIO, 1 + tolerance))
        return floors

    def goodput_floors(self) -> dict[str, Floor]:
        """Each goodput variant's floor in a gate run (core.decided), or {} when any has none.
        (--iterations sets timed samples, not replays: the runner's gate_entries decides.)"""
        if not self.spec.gate_entries or self.spec.mode != "full":
            return {}
        floors = {}
        for name in [n for n in self.sides if self.examples[n].goal == "goodput"]:
            floor = round_goal_floor(self.spec.gate_entries.get(name), "goodput")
            if floor is None or option(self.bench(name), "negative_result", ""):
                return {}
            floors[name] = floor
        return floors

    def goodput_decided(self, found: dict[str, list], floors: dict[str, Floor]) -> bool:
        """True once the replays so far bound every live variant's median goodput ratio (over
        all REPLAYS rounds) above its floor (core.decided.median_bounds)."""
        from core import goodput

        intervals = {}
        for name in [n for n in floors if n in self.sides]:
            ratios = goodput.paired_ratios(found["baseline"], found[name]) or []
            bounds = median_bounds(ratios, goodput.REPLAYS)
            if bounds is not None:
                intervals[name] = bounds
        live = {name: floor for name, floor in floors.items() if name in self.sides}
        return rounds_decided(intervals, live) is not None

    def measure_busy(self) -> None:
        """Each side's GPU busy share (core.busy), sides in order on every rank; each rank
        reports its own GPU and rank 0 keeps the lowest (the GPU left waiting most)."""
        from core.busy import busy_share
        from core.inputs import clone

        mine: dict[str, float | None] = {}
        for name in ["baseline", *self.sides]:
            bench = self.bench(name)
            inplace = option(bench, "inplace", False)
            mine[name] = busy_share(
                lambda: bench.run(clone(self.timed_inputs) if inplace else self.timed_inputs),
                lambda: _sync(self.device))
        self.check_guard("while measuring the GPU's busy share")
        every = self.ranks.all(mine) if self.ranks.distributed else [mine]
        for name, value in mine.items():
            values = [r[name] for r in every if r.get(name) is not None]
            side = self.result.baseline if name == "baseline" else self.examples[name].timing
            if side is not None and values:
                side.gpu_busy_pct = min(values)

    def measure_goodput(self) -> None:
        """Goal goodput (core.goodput): each side's engine serves the pair's trace in real time,
        REPLAYS times, sides alternating. Every round's trace comes from a fresh seed (the
        pair draws at least its prompts from it, so an engine cannot have its answers ready),
        and each side's tokens must equal the baseline's on it (greedy decoding)."""
        from core import goodput

        if self.ranks.distributed:
            raise PairError(f"{self.file}: goal goodput replays in one process (an engine may "
                            f"drive several GPUs from it); this pair runs as several ranks")
        names = ["baseline", *[n for n in self.sides if self.examples[n].goal == "goodput"]]
        found: dict[str, list] = {name: [] for name in names}
        floors = self.goodput_floors()
        for _ in range(1 if self.spec.mode == "smoke" else goodput.REPLAYS):
            if floors and self.goodput_decided(found, floors):
                break  # a gate run whose verdicts the remaining rounds cannot change
            seed = _new_seed(self.rng)
            self.integrity.verify_seeds.append(seed)
            simulated = bool(option(self.baseline, "simulated", ""))
            trace = None if simulated else self.baseline.trace(seed)
            expected = None
            for name in [n for n in names if n == "baseline" or n in self.sides]:
                bench = self.bench(name)
                try:
                    timings = (bench.simulated_replay(seed) if simulated  # virtual time
                               else goodput.replay(bench.engine(), trace))
                except Exception as exc:  # noqa: BLE001
                    if name == "baseline":
                        raise PairError(f"{self.file}: goodput replay: {type(exc).__name__}: {exc}")
                    self.fail(name, f"{self.examples[name].file}: goodput replay: "
                                    f"{type(exc).__name__}: {exc}")
                    continue
                tokens = goodput.token_table(timings)
                if name == "baseline" or simulated:  # a simulation has no tokens to agree on
                    expected = tokens
                elif tokens != expected:
                    wrong = next(i for i, (a, b) in enumerate(zip(tokens, expected)) if a != b)
                    self.fail(name, f"{self.examples[name].file}: during the goodput replay "
                                    f"(trace seed {seed}) request {wrong} got other tokens than "
                                    f"the baseline's: greedy decoding must give the same answer")
                    continue
                try:
                    found[name].append(goodput.summarize(timings, bench.slo))
                except goodput.ReplayError as exc:
                    if name == "baseline":
                        raise PairError(f"{self.file}: goodput replay: {exc}")
                    self.fail(name, f"{self.examples[name].file}: goodput replay: {exc}")
        self.check_guard("while replaying the goodput trace")
        self.result.baseline.goodput = found["baseline"]
        for name in names[1:]:
            if name in self.sides:
                self.examples[name].timing.goodput = found[name]

    def measure_simulated_cost(self) -> None:
        """Goal simulated_cost: each side prices the work it plans, in its own model, on the
        inputs of SIMULATED_COST_SEEDS fresh seeds (the same inputs for every side)."""
        from core.inputs import clone

        names = ["baseline", *[n for n in self.sides if self.examples[n].goal == "simulated_cost"]]
        costs: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(SIMULATED_COST_SEEDS):
            seed = _new_seed(self.rng)
            self.integrity.verify_seeds.append(seed)
            inputs = self.baseline.make_inputs(seed)
            for name in [n for n in names if n == "baseline" or n in self.sides]:
                try:
                    cost = float(self.bench(name).simulated_cost(clone(inputs)))
                    if not cost > 0:
                        raise ValueError(f"simulated_cost returned {cost!r}, not a positive "
                                         f"number of seconds")
                except Exception as exc:  # noqa: BLE001
                    self.side_raised(name, exc, "simulated_cost()")
                    continue
                costs[name].append(cost)
        self.check_guard("while pricing the simulated work")
        self.result.baseline.simulated_costs = costs["baseline"]
        for name in names[1:]:
            if name in self.sides:
                self.examples[name].timing.simulated_costs = costs[name]

    def graph_call(self, name: str, call: timing.Fn) -> tuple[timing.Fn, int]:
        """`call` captured in a CUDA graph (timing_mode = "graph"); a pair whose run()
        cannot be captured fails with the reason (the baseline: the whole pair)."""
        try:
            return timing.graph_replay(call, agree=self.ranks if self.ranks.distributed else None)
        except timing.GraphCaptureError as exc:
            why = (f"{self.name_of(name)}: timing_mode = 'graph', but run() cannot be captured in a CUDA "
                   f"graph ({exc}); remove host synchronization, .item(), CPU tensors and "
                   f"new allocations outside torch from run(), or time it with 'hot'")
            if name == "baseline":
                raise PairError(why) from exc
            raise timing.GraphCaptureError(why) from exc

    def answer(self, out: Any) -> Any:
        """A private copy of a run()'s output, on the ranks whose outputs are verified."""
        return snapshot(out) if self.answers_here else None

    def check_timed(self, inputs: Any, captured: dict[str, Any], index: int) -> set[str]:
        """Captured timed outputs against the baseline's output on the same values."""
        from core.inputs import clone

        expected = self.answer(self.baseline.run(clone(inputs)))  # fresh tensors: no cache can hit
        _sync(self.device)
        if not self.answers_here:  # the baseline ran (its collectives need every rank); rank 0 checks
            return set()
        where = (f" for a timed call of round {index} (inputs switched to the values of seed "
                 f"{self.integrity.timed_seeds[-1]} just before it)")
        if "baseline" in captured:
            check = compare(expected, captured["baseline"], _tolerance(self.baseline, self.baseline))
            if not check.ok:
                raise PairError(f"{self.file}: the baseline's output{where} differs from its own "
                                f"output on a fresh copy of the same inputs: {check.message}; "
                                f"run() returns a result cached across calls")
        dropped = set()
        for name in list(self.sides):
            if name in captured:
                self.integrity.timed_output_checks += 1
                if not self.check_output(name, expected, captured[name],
                                         f"{where}: the timed output differs from the baseline "
                                         f"on the same values (a result cached across calls, "
                                         f"or prepared in setup(), fails here)"):
                    dropped.add(name)
        return dropped

    def escaped(self, batches: list[timing.Batch]) -> str | None:
        """core.integrity.escaped_work, unless other pairs share the GPU (PairSpec.shared_gpu)."""
        self.integrity.escape_check = not self.spec.shared_gpu
        if self.spec.shared_gpu:
            return None
        return escaped_work(batches, self.integrity.launch_gap_ms, self.device)

    def collect(self, measurement: timing.Measurement) -> None:
        escaped = self.escaped(measurement.batches["baseline"])
        if escaped:
            raise PairError(f"{self.file}: {escaped}")
        for name in list(self.sides):
            escaped = self.escaped(measurement.batches[name])
            if escaped:
                self.fail(name, f"{self.examples[name].file}: {escaped}")
        self.agree()
        self.across_ranks(measurement)
        base = measurement.samples_ms["baseline"]
        self.result.baseline = self.side_result("baseline", measurement)
        for name in list(self.sides):
            samples = measurement.samples_ms[name]
            ex = self.examples[name]
            ex.timing = self.side_result(name, measurement)
            ex.baseline = self.result.baseline
            ex.speedup = self.result.baseline.stats.median / ex.timing.stats.median
            rounds = ([len(b.samples_ms) for b in measurement.batches["baseline"]],
                      [len(b.samples_ms) for b in measurement.batches[name]])
            ex.speedup_ci = speedup_interval(base, samples, rounds=rounds)

    def across_ranks(self, measurement: timing.Measurement) -> None:
        """Each sample becomes the slowest rank's (ranks time the same calls, in step); each
        rank's median is kept. One rank: nothing changes."""
        self.rank_medians: dict[str, list[float]] = {}
        if not self.ranks.distributed:
            return
        names = ["baseline", *self.sides]
        every = self.ranks.all({n: measurement.samples_ms[n] for n in names})
        for name in names:
            per_rank = [samples[name] for samples in every]
            measurement.samples_ms[name] = [max(values) for values in zip(*per_rank)]
            self.rank_medians[name] = [summarize(samples).median for samples in per_rank]

    def side_result(self, name: str, measurement: timing.Measurement) -> SideResult:
        batches = [BatchCheck(sum(b.samples_ms), b.harness_ms, b.wall_ms, len(b.samples_ms))
                   for b in measurement.batches[name]]
        host_ms = None
        if self.device.startswith("cuda"):
            bench, inputs = self.bench(name), self.timed_inputs
            host_ms, _ = timing.host_probe(lambda: bench.run(inputs))
        return SideResult(summarize(measurement.samples_ms[name]), self.bench(name).workload(),
                          batches=batches, host_ms=host_ms, graph_calls=self.graph_calls.get(name, 0),
                          rank_medians_ms=self.rank_medians.get(name, []),
                          memory=self.footprints.get(name), setup_s=self.setup_s.get(name))

    # --- the whole pair ----------------------------------------------------------------
    def run(self) -> PairResult:
        from core.hardware import clocks

        cuda = self.device.startswith("cuda")
        self.result.clocks_start = clocks() if cuda else {}
        try:
            if not self.load():
                return self.result
            self.agree()
            if self.measures_memory:
                self.measure_memory()
                self.agree()
            started = time.perf_counter()
            seeds = (_new_seed(self.rng), _new_seed(self.rng))
            self.integrity.verify_seeds = list(seeds)
            first = self.verify(seeds[0])
            self.agree()
            second = self.verify(seeds[1])
            self.agree()
            self.check_seed_sensitivity(first, second, seeds)
            self.agree()
            del first, second
            self.integrity.verify_s = time.perf_counter() - started
            if not self.sides:
                failed = any(ex.status == "failed" for ex in self.examples.values())
                self.result.status = "failed" if failed else "skipped"
                return self.result
            self.measure()
            if cuda and option(self.baseline, "report_gpu_busy", False):
                self.measure_busy()
            if any(self.examples[n].goal == "goodput" for n in self.sides):
                self.measure_goodput()
            if any(self.examples[n].goal == "simulated_cost" for n in self.sides):
                self.measure_simulated_cost()
            stateful = [n for n in ["baseline", *self.sides] if option(self.bench(n), "stateful", False)]
            if stateful and self.sides:
                seed = _new_seed(self.rng)
                self.integrity.verify_seeds.append(seed)
                self.verify(seed, " after timing")
                self.agree()
        except PairError as exc:
            if self.ranks.distributed:  # every rank must stop, not only this one
                self.ranks.abort(str(exc))
            self.result.fail_all(str(exc))
        except Exception as exc:  # noqa: BLE001
            why = f"{self.spec.pair}: raised {type(exc).__name__}:\n{_short_traceback(exc)}"
            if self.ranks.distributed:
                self.ranks.abort(why)
            self.result.fail_all(why)
        finally:
            self.teardown()
        self.result.clocks_end = clocks() if cuda else {}
        return self.result

    def teardown(self) -> None:
        """Every side that was loaded, also variants that failed (their files and worker
        processes must not outlive the pair)."""
        for bench in [self.baseline, *self.loaded]:
            try:
                if bench is not None:
                    bench.teardown()
            except Exception:  # noqa: BLE001 - a failing teardown must not lose results
                pass


def _device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def run_pair(spec: PairSpec, rng: random.Random | None = None) -> PairResult:
    from core.ranks import from_environment

    device = _device()
    ranks = from_environment(device)  # one rank unless torchrun started this process
    return PairSession(spec, device, rng or random.SystemRandom(), ranks).run()


def cold_start(spec: PairSpec, side: str) -> dict[str, Any]:
    """One side's setup() and first call in this fresh process (core.compile_time)."""
    from core.compile_time import time_cold_start

    paths = {"baseline": spec.baseline, **{e["name"]: e["path"] for e in spec.examples}}
    try:
        bench = load_benchmark(Path(paths[side]))
        result = time_cold_start(bench, BenchContext(seed=spec.seed, device=_device(), mode=spec.mode),
                                 _new_seed(random.SystemRandom()))
        bench.teardown()
    except Exception as exc:  # noqa: BLE001 - reported to the runner, which fails the side
        return {"error": f"{type(exc).__name__}: {exc}"}
    return result.to_dict()


def load_test(spec: PairSpec, side: str, duration_s: float) -> dict[str, Any]:
    """One side's engine under its pair's trace for a duration (`aisp tools load-test`)."""
    from core import goodput

    paths = {"baseline": spec.baseline, **{e["name"]: e["path"] for e in spec.examples}}
    try:
        bench = load_benchmark(Path(paths[side]))
        if not callable(getattr(bench, "engine", None)):
            return {"error": f"{relative(paths[side])} has no engine(): load tests need a "
                             f"serving pair (goal goodput: trace(seed), engine(), slo)"}
        bench.ctx = BenchContext(seed=spec.seed, device=_device())
        bench.setup(bench.ctx)
        timings, replays = goodput.load_test(bench.trace, bench.engine, duration_s,
                                             _new_seed(random.SystemRandom()))
        stats = goodput.summarize(timings, bench.slo)
        bench.teardown()
    except Exception as exc:  # noqa: BLE001 - reported to the command line
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"stats": stats.to_dict(), "replays": replays, "slo": str(bench.slo)}


def ranks_needed(spec: PairSpec) -> int:
    """How many ranks the pair's baseline asks for (`requires.gpus`), when it can run here;
    1 for a `one_process` pair (it drives its GPUs itself), and otherwise (the session itself then reports the SKIP or the error)."""

    try:
        bench = load_benchmark(Path(spec.baseline))
    except PairError:
        return 1
    requires = option(bench, "requires", Requirements())
    needed = requires.gpus
    if needed <= 1 or requires.one_process or unmet_requirement(bench, _device()):
        return 1
    return needed


def launch_ranks(spec: PairSpec, argv: list[str], token: str, out: Path, needed: int) -> None:
    """This child becomes the launcher of the pair's ranks (core.ranks); rank 0 signs the
    result. When no rank did, the launcher reports the first rank's reason. Never returns."""
    from core.ranks import launch

    outcome = launch(needed, argv, token)
    if out.exists():
        sys.stdout.flush()
        os._exit(0)
    result = PairSession(spec, _device(), random.Random()).result
    result.fail_all(outcome.first_error or f"{spec.pair}: torchrun exited with code "
                    f"{outcome.code} and no rank wrote a result (see the log)")
    deliver(out, token, result.to_dict())


def peak_ranks(needed: int, argv: list[str], token: str, out: Path) -> dict[str, Any]:
    """Outside torchrun: launch `needed` ranks of this same command and report their failure
    if rank 0 wrote nothing. Inside: measure (core.multigpu); only rank 0 returns."""
    from core import multigpu, ranks

    if "RANK" not in os.environ:
        outcome = ranks.launch(needed, argv, token)
        if out.exists():
            os._exit(0)
        return {"error": outcome.first_error or f"torchrun exited with code {outcome.code}"}
    here = ranks.from_environment("cuda")
    try:
        payload = multigpu.measure(here.rank)
    except Exception as exc:  # noqa: BLE001
        here.abort(f"{type(exc).__name__}: {exc}")
    if here.rank != 0:
        os._exit(0)
    return payload


def _keep_no_launch_config_picks() -> None:
    """In a precompile process (core.precompile): Inductor benchmarks a generated kernel's
    launch configurations at its first call and, by default, keeps the winner on disk for
    later processes. A choice made here, while other compiles share the GPU, must not be the
    one a pair's child uses: the kernels compiled here are told not to keep or read picks
    (the setting is not part of Inductor's cache key), so the pair's child benchmarks them
    itself, on an idle GPU, as it always did."""
    import torch._inductor.config as inductor_config

    inductor_config.autotune_local_cache = False


def main(argv: list[str]) -> int:
    global GUARD
    mode = argv[0] if argv and argv[0].startswith("--") else "pair"
    rank = int(os.environ.get("RANK", "0"))  # set by torchrun for the ranks of multi-GPU pairs
    if "RANK" in os.environ:
        from core.ranks import die_with_parent

        die_with_parent()
    # --profile-side runs under ncu/nsys and writes no result; every other mode signs one.
    # Ranks share the launcher's stdin: only rank 0 reads the token (and signs the result).
    token = "" if mode == "--profile-side" or rank != 0 else read_token()
    GUARD = Guard()
    if os.environ.get("AISP_PRECOMPILING") == "1":
        _keep_no_launch_config_picks()
    if mode == "--profile-side":
        from core.profiling import profile_side

        profile_side(PairSpec(**json.loads(Path(argv[1]).read_text())), argv[2])
        return 0
    if mode == "--probe":
        from core.hardware import probe

        out, payload = Path(argv[1]), probe()
    elif mode == "--peak-ranks":  # hw peak --gpus N: link ceilings measured by N ranks
        out = Path(argv[2])
        payload = peak_ranks(int(argv[1]), argv, token, out)
    elif mode == "--cold-start":
        out = Path(argv[3])
        payload = cold_start(PairSpec(**json.loads(Path(argv[1]).read_text())), argv[2])
    elif mode == "--profile-memory":
        from core.profiling import profile_memory

        out = Path(argv[2])
        payload = profile_memory(PairSpec(**json.loads(Path(argv[1]).read_text())), out.parent)
    elif mode == "--load-test":
        out = Path(argv[4])
        payload = load_test(PairSpec(**json.loads(Path(argv[1]).read_text())), argv[2],
                            float(argv[3]))
    elif mode == "--occupancy":  # tools occupancy-tuning: SPEC SIDE PRESETS OUT
        from dataclasses import asdict

        from core.occupancy import measure, parse_presets

        out, spec = Path(argv[4]), PairSpec(**json.loads(Path(argv[1]).read_text()))
        paths = {"baseline": spec.baseline, **{e["name"]: e["path"] for e in spec.examples}}
        try:
            rows = measure(spec.baseline, paths[argv[2]], spec.seed, parse_presets(argv[3]), _device())
            payload = {"rows": [asdict(r) for r in rows]}
        except Exception as exc:  # noqa: BLE001 - reported by the command
            payload = {"error": f"{type(exc).__name__}: {exc}"}
    elif mode == "--profile-minimal":
        from core.profiling import profile_minimal

        out = Path(argv[2])
        payload = profile_minimal(PairSpec(**json.loads(Path(argv[1]).read_text())), out.parent)
    else:
        spec = PairSpec(**json.loads(Path(argv[0]).read_text()))
        out = Path(argv[1])
        if "RANK" not in os.environ:
            needed = ranks_needed(spec)
            if needed > 1:
                launch_ranks(spec, argv, token, out, needed)
        started = time.perf_counter()
        result = run_pair(spec)
        if rank != 0:  # rank 0 has every rank's samples and writes the result
            sys.stdout.flush()
            os._exit(0)
        result.duration_s = round(time.perf_counter() - started, 3)
        problem = GUARD.problem()
        if problem and result.status == "ok":
            result.fail_all(f"{spec.pair}: {problem} (found before writing the result)")
        payload = result.to_dict()
    deliver(out, token, payload)
    return 0  # not reached: deliver() exits


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
