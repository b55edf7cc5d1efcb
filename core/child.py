"""Measures one pair (a baseline and its optimized variants) inside a child process.

    python -m core.child SPEC.json RESULT.json      # SPEC (core.record.PairSpec) from core.runner

The token that signs the result is asked for on stdin once the checks are done, just before
the result is written (core.signing): no pair code runs while it is here. The harness's other child
processes (probe, cold starts, profiling, load tests) are core.toolchild. Steps for a pair:
1. load every side; a variant must follow its pair's rules: the baseline's input builder,
   workload(), reference(), trace and cost model (core.rules); its
   declarations are read (core.declarations) and every side is set up once, with the same
   weight seed. Each goal present gets its hooks (core.goals), e.g. the memory footprints.
2. verify on two fresh seeds: inputs checksummed around each call and never returned
   (unless `inplace`), the baseline checked against `reference()`, every variant against the
   baseline (a declared tolerance bounded by the output's scale, core.verify), and each side's
   output must change with the seed. `stateful` sides are set up afresh for each check.
3. time the verified sides in interleaved rounds. Every timed call gets input values no
   earlier call had (core.fresh: k fresh sets from make_inputs before a batch of k calls,
   copied into the inputs before each call, untimed). After each call returns, a draw the
   pair cannot read decides whether its output is the one kept (core.timing.Keep); after the
   round it is compared with the baseline's output on a fresh copy of the same values. A
   `stateful` side's batch starts from a fresh setup() in some rounds (core.statecheck), its
   output is kept within its first STATE_CHECK_CALLS calls, and the baseline is stepped from
   a fresh setup() through the same calls to check it (those calls must not be slower than
   its others). A result cached across calls (keyed on anything), or prepared in setup(), fails.
4. after timing: the escape check per side, the goals' own measurements (goodput replays,
   simulated costs), the Guard (timing and harness functions unreplaced), and `stateful`
   sides verified once more from a fresh setup.
Seeds are drawn at random by the harness (a pair cannot know them) and recorded.
"""
from __future__ import annotations

import os
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch  # imported before any pair module, for the Guard's snapshot

from core import goals, timing  # timing binds its functions before any pair module is imported
from core.benchmark import (BenchContext, Benchmark, PairError, Requirements, SideError, Tolerance,
                            option)
from core.declarations import Declarations, declaration_problem
from core.decided import decided
from core.hardware import SmClock
from core.integrity import EscapeStrikes, Guard, escape_problem, mutation_problem
from core.launcher import device as _device, launch_ranks, none_can_run, ranks_needed
from core.pairfile import load_benchmark, relative, unmet_requirement
from core.stacks import dump_stacks_on_signal
from core.sourcecheck import check_pair_files, describe
from core.ranks import Ranks
from core.busy import measure_busy
from core.checks import Checks
from core.record import BatchCheck, ExampleResult, PairResult, PairSpec, SideResult
from core.rules import variant_problem, workload_problem
from core.statecheck import StateChecks
from core.threads import OutsideWork, ThreadLedger
from core.signing import deliver, read_token
from core.stats import speedup_interval, summarize
from core.verify import plain_problem, snapshot_into

GUARD: Guard | None = None  # built in main(), before any pair module is imported
DISTRIBUTED_WARMUP = 5  # warm-up calls per side when ranks must call run() equally often
DISTRIBUTED_ROUND_S = 0.1  # GPU time per side per round for multi-GPU pairs (0.025 s otherwise)
STATE_CHECK_CALLS = 4  # a stateful side's kept output is one of its first calls after setup()


def _short_traceback(exc: BaseException) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return "".join(lines[-6:]).strip()


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        timing._synchronize()


def _new_seed(rng: random.Random) -> int:
    return rng.randrange(1, 2**31 - 1)


class PairSession(Checks):
    """One pair inside the child: its sides, its inputs, its result."""

    def __init__(self, spec: PairSpec, device: str, rng: random.Random, ranks: Ranks | None = None):
        self.spec, self.device = spec, device
        self.ranks = ranks or Ranks()
        # every rank draws the same seeds and capture positions: one seed, rank 0's
        self.rng = random.Random(self.ranks.from_rank0(rng.randrange(2**63))) if self.ranks.distributed else rng
        self.result = PairResult(pair=spec.pair, device=device, ranks=self.ranks.world)
        self.examples = {e.name: ExampleResult(name=e.name, id=e.id, file=relative(e.path))
                         for e in spec.examples}
        self.result.examples = list(self.examples.values())
        self.baseline: Benchmark | None = None
        self.sides: dict[str, Benchmark] = {}  # variants still in the race
        self.loaded: list[Benchmark] = []  # every side that was set up (torn down at the end)
        self.threads = ThreadLedger()  # which side started each thread (core.threads)
        self.integrity = self.result.integrity
        self.file = relative(spec.baseline)
        self.graph_calls: dict[str, int] = {}  # side -> run() calls per replayed CUDA graph
        self.rank_medians: dict[str, list[float]] = {}  # side -> each rank's median (multi-GPU)
        self.setup_bytes: dict[str, int] = {}  # side -> device bytes its first setup() kept
        self.setup_s: dict[str, float] = {}  # side -> its first setup()'s seconds
        self.goal_data: dict[str, Any] = {}  # what a goal's hooks keep between them (core.goals)
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

    def sync(self) -> None:
        _sync(self.device)

    def name_of(self, name: str) -> str:
        return self.file if name == "baseline" else self.examples[name].file

    def bench(self, name: str) -> Benchmark:
        return self.baseline if name == "baseline" else self.sides[name]

    def new_seed(self) -> int:
        return _new_seed(self.rng)

    def goals_of(self) -> dict[str, str]:
        """Each variant still in the race, with the goal it declared."""
        return {name: self.examples[name].goal for name in self.sides}

    def side_results(self) -> dict[str, SideResult]:
        """The timed results of the baseline and of the variants still in the race."""
        found = {"baseline": self.result.baseline}
        found.update({n: self.examples[n].timing for n in self.sides if self.examples[n].timing})
        return {n: side for n, side in found.items() if side is not None}

    def tolerance(self, name: str) -> Tolerance | None:
        """The tolerance `name` is judged with: its declared one, else its baseline's, else
        the default by dtype (None)."""
        bench = self.bench(name)
        tol = option(bench, "tolerance", None) or option(self.baseline, "tolerance", None)
        return Tolerance(*tol) if isinstance(tol, (tuple, list)) else tol

    def check_guard(self, when: str, blame: str | None = None) -> None:
        """A replaced timing or harness function fails the whole pair: the replacement stays
        in this process and could bend every side's numbers, not only the culprit's."""
        if problem := (GUARD.problem() if GUARD else None):
            who = self.name_of(blame) if blame else self.spec.pair
            raise PairError(f"{who}: {problem} ({when})")

    def check_declarations(self, when: str) -> set[str]:
        """A declaration set on a side's instance since its load (core.declarations) fails it, or the
        whole pair for the baseline's (they judge every side). Returns the variants dropped."""
        if problem := declaration_problem(self.baseline, self.file):
            raise PairError(f"{problem} ({when})")
        found = {n: declaration_problem(self.sides[n], self.examples[n].file) for n in list(self.sides)}
        for name, problem in found.items():
            if problem:
                self.fail(name, f"{problem} ({when})")
        return {name for name, problem in found.items() if problem}

    # --- 1. load and set up ------------------------------------------------------------
    def load(self) -> bool:
        """Load every side; False when the pair cannot run at all (result says why)."""
        refused = check_pair_files(self.spec.files())
        if Path(self.spec.baseline) in refused:  # read before any of the pair's code runs
            self.result.fail_all(f"{self.file}: {describe(refused[Path(self.spec.baseline)])}")
            return False
        try:
            self.baseline = load_benchmark(Path(self.spec.baseline))
            self.threads.claim("baseline")
        except PairError as exc:
            self.result.fail_all(str(exc))
            return False
        self.check_guard("while importing", "baseline")
        if problem := declaration_problem(self.baseline, self.file):
            self.result.fail_all(problem)
            return False
        if GUARD:  # from here, nothing a variant imports may change the baseline or its modules
            GUARD.watch_pair(self.baseline)
        self.result.teaching = bool(option(self.baseline, "teaching", False))
        self.result.slow_because = str(option(self.baseline, "slow_because", "") or "")
        self.answers_here = not (option(self.baseline, "rank0_output", False) and self.ranks.rank)
        why = unmet_requirement(self.baseline, self.device, self.spec.gpus)
        if why:
            self.result.fail_all(f"{self.file}: {why}", "skipped")
            return False
        requires = option(self.baseline, "requires", Requirements())
        if requires.one_process and self.device.startswith("cuda"):
            self.result.ranks = requires.gpus  # one process, several GPUs: stored as `2x_h200`
        for e in self.spec.examples:
            if Path(e.path) in refused:
                self.fail(e.name, f"{relative(e.path)}: {describe(refused[Path(e.path)])}")
            else:
                self.load_variant(e.name, e.path)
        for goal, names in goals.by_goal(self.goals_of()).items():
            goal.before_setup(self, names)
        for name in ["baseline", *self.sides]:
            self.setup(name)
        self.check_declarations("after setup()")
        self.check_owned_rules()
        return True

    def load_variant(self, name: str, path: str) -> None:
        try:
            bench = load_benchmark(Path(path))
        except PairError as exc:
            self.fail(name, str(exc))
            return
        finally:
            self.threads.claim(name)  # threads its import started
        self.check_guard("while importing", name)
        why = unmet_requirement(bench, self.device, self.spec.gpus)
        if why:
            self.fail(name, f"{relative(path)}: {why}", "skipped")
            return
        problem = (declaration_problem(bench, relative(path))
                   or variant_problem(self.baseline, bench, relative(path)))
        if problem:
            self.fail(name, problem)
            return
        ex = self.examples[name]
        ex.declarations = found = Declarations.of(self.baseline, bench)
        ex.goal, ex.negative_result, ex.cpu_bound = found.goal, found.negative_result, found.cpu_bound
        ex.simulated, ex.teaching = found.simulated, found.teaching
        self.sides[name] = bench
        self.loaded.append(bench)

    def check_owned_rules(self) -> None:
        """What can only be read once the sides are set up: a variant's own workload (it
        declared a precision) claims no more than the baseline's, and its SLO is the pair's."""
        base = self.baseline.workload()
        for name in list(self.sides):
            bench, file = self.sides[name], self.examples[name].file
            if problem := (variant_problem(self.baseline, bench, file)
                           or workload_problem(base, bench.workload(), file)):
                self.fail(name, problem)

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
        self.threads.claim(name)
        if cuda:
            self.setup_bytes.setdefault(name, torch.cuda.memory_allocated() - before)
        self.check_guard("during setup()", name)

    def side_raised(self, name: str, exc: BaseException, where: str) -> None:
        why = str(exc) if isinstance(exc, SideError) else (
            f"raised {type(exc).__name__} in {where}:\n{_short_traceback(exc)}")
        if self.ranks.distributed:  # the other ranks may wait in a collective of this call
            self.ranks.abort(f"{self.name_of(name)}: {why}")
        if name == "baseline":
            raise PairError(f"{self.file}: baseline {why}") from exc
        self.fail(name, f"{self.examples[name].file}: {why}")

    # --- 3. timing with timed-output checks --------------------------------------------
    def measure(self) -> None:
        """Time every side. Every timed call gets values no earlier call had (core.fresh);
        after each call returns, a draw the pair cannot read decides whether its output is
        the one kept (core.timing.Keep), and after the round it is compared with the
        baseline's answer on a fresh copy of that call's values. A result cached across
        calls (keyed on anything), one call late, skipped for some calls, or prepared in
        setup() then differs from the baseline's."""
        from core.fresh import FreshSets, most_calls
        from core.inputs import changed, clone, refill

        device = self.device
        names = ["baseline", *self.sides]
        benches = {n: self.bench(n) for n in names}
        inputs = self.baseline.make_inputs(self.new_seed())  # the tensors every side gets
        self.timed_inputs = inputs
        fresh = {n: FreshSets(self.baseline.make_inputs, self.new_seed, device) for n in names}
        modes = {option(b, "timing_mode", "hot") for b in benches.values()}
        cold, graph = "cold" in modes, "graph" in modes and device.startswith("cuda")
        flush = timing.L2Flusher() if cold and device.startswith("cuda") else None
        stateful = {n for n in names if option(benches[n], "stateful", False)}
        outside = OutsideWork(self.threads)  # a variant's threads at work during others' batches
        checks = StateChecks(self.rng, bool(stateful), "baseline" in stateful, self.ranks.from_rank0)
        captured: dict[str, Any] = {}
        impure: dict[str, str] = {}  # side -> why a timed output was not plain
        self.captured_at: dict[str, int] = {}
        self.sm_clock = SmClock(device)
        # one untimed call per side, in the sides' order (not the set's: ranks hash strings
        # differently, and every rank must call the sides' collectives in the same order)
        buffers = {n: self.answer(benches[n].run(inputs)) for n in names}
        _sync(device)

        def side(name: str) -> timing.Timed:
            bench = benches[name]
            inplace = option(bench, "inplace", False)
            given = clone(inputs) if inplace else inputs  # an inplace side works on its own copy

            def before(i: int) -> None:  # call i's fresh values (a warm-up call, -1: the template's)
                if i >= 0:
                    fresh[name].into(given, i)
                elif inplace:
                    refill(given, inputs)
                if flush:
                    flush()
            def keep(i: int, out: Any) -> None:  # into the buffer sized before timing: no allocation
                if name in stateful and not checks.now:
                    return
                captured[name] = buffers[name] = (snapshot_into(buffers.get(name), out)
                                                  if self.answers_here else None)

            def prepare(calls: int) -> None:
                self.ranks.barrier(option(self.baseline, "rank0_output", False))  # see Ranks.barrier
                started = time.perf_counter()
                if name in stateful and checks.now:
                    bench.setup(bench.ctx)  # this batch steps from a fresh state
                    self.integrity.state_setup_s += checks.setup_took(name, time.perf_counter() - started)
                fresh[name].draw(calls)
                self.integrity.fresh_sets += calls
                self.integrity.fresh_s += time.perf_counter() - started
                outside.before_batch()

            def call() -> Any:  # every timed output is plain (a lazy one would cost nothing)
                out = bench.run(given)
                if (type(out) is not torch.Tensor and self.answers_here
                        and (problem := plain_problem(out))):
                    impure.setdefault(name, problem)
                return out
            calls = 1
            if graph:  # every side alike, so the speedup compares GPU time with GPU time
                call, calls = self.graph_call(name, call)
                self.graph_calls[name] = calls
            return timing.Timed(call, before, keep, prepare, calls, most_calls(inputs, device),
                                capture_within=STATE_CHECK_CALLS if name in stateful else None)

        strikes = EscapeStrikes()  # one batch per side may be flagged (a host stall), not two

        def before_round(index: int) -> None:
            checks.start_round(index)

        def after_batch(name: str, batch: timing.Batch) -> bool:
            """Right after each batch: no work escaped it, and the inputs hold the last call's
            values (a side that breaks either rule is out before the next side is timed)."""
            started = time.perf_counter()
            outside.after_batch(name, batch.wall_ms / 1e3, list(self.sides))
            checks.batch_took(name, batch.wall_ms / 1e3, batch.samples_ms if name in stateful else (), STATE_CHECK_CALLS)
            self.captured_at[name] = batch.captured_at or 0
            self.sm_clock.sample(name)
            problem = impure.get(name) or strikes.judge(name, self.escaped([batch], side=name))
            if not problem and not option(benches[name], "inplace", False):
                mutated = changed(fresh[name].last, inputs)
                problem = f"{mutation_problem(mutated)} (during timing)" if mutated else None
            fresh[name].settle(batch.captured_at if name in captured else None, "baseline" in stateful)
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
            self.check_guard("during timing")  # no verdict with a patched harness (1 ms)
            dropped = self.check_declarations("during timing")
            dropped |= self.check_timed(fresh, captured, index, "baseline" in stateful)
            captured.clear()
            self.integrity.checks_s += time.perf_counter() - started
            return dropped

        if device.startswith("cuda"):
            self.integrity.launch_gap_ms = timing.launch_gap_ms(device)
        policy = timing.StopPolicy(fixed_samples=self.spec.iterations)
        cap = option(self.baseline, "time_cap_s", None)
        if cap:
            policy.max_time_s = float(cap)
        if goals.time_is_context(self.goals_of()):
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
        floors = self.timing_floors()
        measurement = timing.interleaved(
            sides, policy, device, warmup, before_round, after_round,
            self.rng.randrange if self.ranks.distributed else None, after_batch,
            self.ranks if self.ranks.distributed else None,
            decide=(lambda r, got, sizes: decided(r, got, sizes, floors)) if floors else None)
        self.integrity.timing_s = time.perf_counter() - started - self.integrity.checks_s - self.integrity.fresh_s
        outside.finish(list(self.sides))
        for name in list(self.sides):  # work outside its batches; honest only where checked
            if problem := outside.problem(name) or checks.window_problem(name, STATE_CHECK_CALLS):
                self.fail(name, f"{self.examples[name].file}: {problem}")
        self.check_guard("during timing")
        self.result.timing_mode = "graph" if graph else "cold" if cold else "hot"
        self.result.stop_reason, self.result.rounds = measurement.stop_reason, measurement.rounds
        self.result.warmup_calls = measurement.warmup_calls
        self.collect(measurement)

    def timing_floors(self) -> dict[str, Any]:
        """The floors the runner computed for a gate run, when every variant is gated on
        its time (core.goals); {} for multi-GPU pairs (the runner read the one-GPU file)."""
        if self.ranks.distributed or self.result.ranks > 1 or self.spec.mode != "full":
            return {}
        return goals.timing_floors(self.spec.floors, self.goals_of())

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

    def escaped(self, batches: list[timing.Batch], name: str = "", side: str = "") -> str | None:
        """core.integrity's checks, unless the GPU is shared or this rank runs no baseline (rank0_output)."""
        self.integrity.escape_check = not self.spec.shared_gpu
        idle = "baseline" in (name, side) and not self.answers_here
        return escape_problem(batches, self.integrity.launch_gap_ms, self.device,
                              self.probes.get(name) if name else None, not (self.spec.shared_gpu or idle))

    def collect(self, measurement: timing.Measurement) -> None:
        self.probes = {}  # each side's calls one at a time (host-bound and left-running checks)
        # a side one rank dropped while timing (its check failed there alone) is dropped on
        # every rank, before the ranks probe the sides still in the race together
        self.agree()
        calls = self.ranks.from_rank0(timing.probe_calls(measurement.samples_ms))  # the ranks agree
        for name in ("baseline", *self.sides) if self.device.startswith("cuda") else ():
            self.probes[name] = timing.host_probe(lambda b=self.bench(name), x=self.timed_inputs: b.run(x),
                                                  calls[name])
        escaped = self.escaped(measurement.batches["baseline"], "baseline")
        if escaped:
            raise PairError(f"{self.file}: {escaped}")
        for name in list(self.sides):
            escaped = self.escaped(measurement.batches[name], name)
            if escaped:
                self.fail(name, f"{self.examples[name].file}: {escaped}")
        self.agree()
        samples = {n: measurement.samples_ms[n] for n in ["baseline", *self.sides]}
        self.rank_medians = self.ranks.slowest(samples)  # the slowest rank's samples, in place
        measurement.samples_ms.update(samples)
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

    def side_result(self, name: str, measurement: timing.Measurement) -> SideResult:
        batches = [BatchCheck(sum(b.samples_ms), b.harness_ms, b.wall_ms, len(b.samples_ms),
                              b.harness_host_ms)
                   for b in measurement.batches[name]]
        probe = self.probes.get(name)
        return SideResult(summarize(measurement.samples_ms[name]), self.bench(name).workload(),
                          batches=batches, host_ms=probe and probe.host_ms, graph_calls=self.graph_calls.get(name, 0),
                          rank_medians_ms=self.rank_medians.get(name, []),
                          setup_s=self.setup_s.get(name), left_ms=probe and probe.left_ms,
                          sm_clock_mhz=self.sm_clock.median(name))

    # --- the whole pair ----------------------------------------------------------------
    def run(self) -> PairResult:
        from core.hardware import clocks

        cuda = self.device.startswith("cuda")
        self.result.clocks_start = clocks() if cuda else {}
        try:
            if not self.load():
                return self.result
            self.agree()
            for goal, names in goals.by_goal(self.goals_of()).items():
                goal.after_setup(self, names)
                self.agree()
            started = time.perf_counter()
            seeds = (self.new_seed(), self.new_seed())
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
                measure_busy(self)
            for goal, names in goals.by_goal(self.goals_of()).items():
                goal.after_timing(self, names)
            if any(option(self.bench(n), "stateful", False) for n in ["baseline", *self.sides]):
                seed = self.new_seed()
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
        """Every loaded side, failed variants too: their files and workers outlive no pair."""
        for bench in [self.baseline, *self.loaded]:
            try:
                if bench is not None:
                    bench.teardown()
            except Exception:  # noqa: BLE001 - a failing teardown must not lose results
                pass


def run_pair(spec: PairSpec, rng: random.Random | None = None) -> PairResult:
    from core.ranks import from_environment

    device = _device()
    ranks = from_environment(device)  # one rank unless torchrun started this process
    return PairSession(spec, device, rng or random.SystemRandom(), ranks).run()


def main(argv: list[str]) -> int:
    global GUARD
    if len(argv) != 2 or argv[0].startswith("--"):
        sys.exit("usage: python -m core.child SPEC.json RESULT.json (tool modes: core.toolchild)")
    dump_stacks_on_signal()  # at a timeout the harness asks every process where it is
    rank = int(os.environ.get("RANK", "0"))  # set by torchrun for the ranks of multi-GPU pairs
    if "RANK" in os.environ:
        from core.ranks import die_with_parent

        die_with_parent()
    GUARD = Guard()
    spec, out = PairSpec.read(argv[0]), Path(argv[1])
    if "RANK" not in os.environ and not check_pair_files(spec.files()):  # refused: load() says so
        needed = ranks_needed(spec)
        skipped = none_can_run(spec, _device(), needed) if needed > 1 else None
        if skipped is not None:
            deliver(out, read_token(), skipped.to_dict())
        if needed > 1:
            launch_ranks(spec, argv, out, needed)
    started = time.perf_counter()
    result = run_pair(spec)
    if rank != 0:  # rank 0 has every rank's samples and writes the result
        sys.stdout.flush()
        os._exit(0)
    result.duration_s = round(time.perf_counter() - started, 3)
    problem = GUARD.problem()
    if problem and result.status == "ok":
        result.fail_all(f"{spec.pair}: {problem} (found before writing the result)")
    deliver(out, read_token(), result.to_dict())  # the token exists here only from now on
    return 0  # not reached: deliver() exits


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
