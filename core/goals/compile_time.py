"""Goal "compile_time": each side's cold start, from process start to its first answer, in
fresh processes with empty compiler caches (core.compile_time below it), is gated: baseline
seconds over the optimized side's (medians). Compiling is host CPU work, so the tolerance is
the cpu_bound one. The steady-state speedup is timed as usual and must stay ≈1: a compile
that is faster because it optimizes less is no win.

Every round runs the sides on one input seed, variants before the baseline (no answer of the
baseline's exists on disk while a variant runs), and each variant's first answer is compared
with the baseline's in a process that imports no pair code (core.toolchild --compare), with
the tolerance the pair's own child resolved.
"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from core import gate as verdict
from core.decided import Floor, rounds_decided
from core.goals.base import Goal, Outside, cut_short, round_floor

if TYPE_CHECKING:
    from core.compile_time import ColdStart
    from core.record import ExampleResult, PairResult


class CompileTime(Goal):
    name = "compile_time"
    field = "compile_ratio"
    gain = "faster cold start"
    host_paced = True  # compilers run on the host: the H200 VMs' compiled ~1.6x faster than the H100's
    what = "cold start "

    def outside(self, job: Outside, names: list[str]) -> None:
        """The cold starts of the baseline and of `names` (measured variants). A side that
        fails, answers wrongly or kept a cache between processes fails its variant (a failing
        baseline, every such variant). In a gate run the cold starts end once the ones so far
        bound every variant's ratio above its floor (core.decided)."""
        from core import compile_time

        job.note(f"      cold starts (up to {compile_time.COLD_STARTS} per side, fresh processes "
                 f"from process start, empty compiler caches) ...")
        result = job.result
        examples = {ex.name: ex for ex in result.examples if ex.name in names}
        errors: dict[str, str] = {}
        rng = random.SystemRandom()
        sides = [*names, "baseline"]  # variants first: no answer of the baseline's is on disk
        seeds: list[int] = []  # one input seed per round, for every side
        started = {side: 0 for side in sides}

        def answer(side: str, index: int) -> Path:
            return job.logs / f"{job.safe}.{side}.cold{index}.pt"

        def start(side: str, env: dict[str, str]) -> ColdStart:
            index = started[side]
            started[side] += 1
            if index == len(seeds):  # the round's first side draws its seed
                seeds.append(rng.randrange(1, 2**31 - 1))
            out = job.logs / f"{job.safe}.{side}.cold.json"
            outcome = job.run_child(["--cold-start", str(job.spec_path), side, str(out), "--seed",
                                     str(seeds[index]), "--answer", str(answer(side, index))],
                                    job.timeout_s, job.logs / f"{job.safe}.{side}.cold.log",
                                    job.root, result=out, env=env, module="core.toolchild")
            payload = outcome.payload or {"error": outcome.problem or outcome.tail[-800:]}
            if "error" in payload:
                errors.setdefault(side, payload["error"])
                return compile_time.ColdStart(float("nan"), float("nan"))
            return compile_time.ColdStart(**payload)

        floors = {n: job.floors[n] for n in names if n in job.floors}
        if len(floors) < len(names):
            floors = {}  # a variant without a stored floor is never decided, so neither is the pair

        def enough(found: dict[str, list[ColdStart]]) -> bool:
            if not floors or errors:
                return False
            intervals = {name: bounds for name in floors
                         if (bounds := compile_time.ratio_bounds(found["baseline"], found[name]))}
            return rounds_decided(intervals, floors) is not None
        found = compile_time.measure(sides, start, enough=enough)
        for name in names:  # each first answer against the baseline's of the same round
            if name in errors or "baseline" in errors:
                continue
            problem = _compare_answers(job, name, answer, len(found[name]),
                                       examples[name].declarations.tolerance)
            if problem:
                errors[name] = problem
        for path in job.logs.glob(f"{job.safe}.*.cold*.pt"):  # compared: no need to keep them
            path.unlink()
        sides_of = {"baseline": result.baseline, **{n: examples[n].timing for n in names}}
        for side, starts in found.items():
            problem = errors.get(side) or compile_time.persisted_problem(starts, sides_of[side].setup_s)
            if problem:
                errors[side] = problem
        result.baseline.cold_starts = found["baseline"]
        for name in names:
            ex = examples[name]
            ex.timing.cold_starts = found[name]
            why = errors.get(name) or (f"baseline: {errors['baseline']}" if "baseline" in errors else "")
            if why:
                ex.fail(f"{ex.file}: cold start (goal compile_time): {why}")

    def floor(self, entry: dict[str, Any]) -> Floor | None:
        return round_floor(self, entry)

    def ratio(self, ex: ExampleResult) -> float | None:
        """Baseline cold start over the optimized side's (medians; 2.0: compiles in half)."""
        from core.compile_time import median_s

        if ex.baseline is None or ex.timing is None or not ex.baseline.cold_starts or not ex.timing.cold_starts:
            return None
        return median_s(ex.baseline.cold_starts) / median_s(ex.timing.cold_starts)

    def gate(self, ex: ExampleResult, entry: dict[str, Any] | None, result: PairResult) -> verdict.GateResult:
        from core.compile_time import ratio_interval

        ratio = self.ratio(ex)
        if ratio is None:
            return verdict.GateResult("new", "goal compile_time: no cold starts measured; not gated")
        lo, hi = ratio_interval(ex.baseline.cold_starts, ex.timing.cold_starts)
        if hi / lo > 1 + verdict.CPU_BOUND_TOLERANCE:
            ex.noisy = (f"cold-start ratio {lo:.2f}-{hi:.2f} over {len(ex.timing.cold_starts)} fresh "
                        f"processes per side is wider than ±{verdict.CPU_BOUND_TOLERANCE / 2:.0%}")
        found = verdict.gate(entry, ratio, (lo, hi), default_tolerance=verdict.CPU_BOUND_TOLERANCE,
                             negative_result=ex.negative_result, measure=self.field, what=self.what)
        slowest = 1 - verdict.DEFAULT_TOLERANCE
        if found.status in ("pass", "new") and ex.speedup_ci and ex.speedup_ci[1] < slowest:
            return verdict.GateResult(
                "regression", f"cold start {ratio:.2f}x faster, but the steady state runs at "
                f"{ex.speedup:.2f}x (interval up to {ex.speedup_ci[1]:.2f}x, below {slowest:.2f}x): "
                f"the faster compile costs run time", found.stored_speedup, found.floor)
        return found

    def sides_figures(self, ex: ExampleResult) -> dict[str, Any]:
        from core.compile_time import median_s

        return {"baseline_cold_start_s": round(median_s(ex.baseline.cold_starts), 3),
                "optimized_cold_start_s": round(median_s(ex.timing.cold_starts), 3)}

    def notes(self, ex: ExampleResult) -> list[str]:
        from core.compile_time import COLD_STARTS

        if self.ratio(ex) is None:
            return []
        base, opt = ex.baseline.cold_starts, ex.timing.cold_starts
        return [f"COMPILE TIME {ex.id} ({self.gate_role(ex)}): cold start "
                f"{_cold(base)} → {_cold(opt)} (process start to first answer, median of "
                f"{len(opt)} fresh processes with empty compiler caches"
                f"{cut_short(opt, COLD_STARTS)}); steady-state time {ex.speedup:.2f}x"]


def _cold(starts: list) -> str:
    """'61.2 s (imports 4.1 s + setup 55.0 s + first call 2.1 s)' for the median cold start."""
    middle = sorted(starts, key=lambda s: s.total_s)[len(starts) // 2]
    return (f"{middle.total_s:.1f} s (imports {middle.import_s:.1f} s + setup {middle.setup_s:.1f} s "
            f"+ first call {middle.first_call_s:.1f} s)")


def _compare_answers(job: Outside, name: str, answer: Callable[[str, int], Path], rounds: int,
                     tolerance: tuple[float, float] | None) -> str | None:
    """Each round's first answer of `name` against the baseline's, in a process that imports
    no pair code; why they differ, or None."""
    out = job.logs / f"{job.safe}.{name}.cold-compare.json"
    pairs = [[str(answer("baseline", i)), str(answer(name, i))] for i in range(rounds)]
    spec = job.logs / f"{job.safe}.{name}.cold-compare.spec.json"
    spec.write_text(json.dumps({"pairs": pairs, "tolerance": tolerance}))
    outcome = job.run_child(["--compare", str(spec), str(out)], job.timeout_s,
                            job.logs / f"{job.safe}.{name}.cold-compare.log", job.root,
                            result=out, module="core.toolchild")
    if outcome.payload is None:
        return f"its first answers could not be compared: {outcome.problem or outcome.tail[-400:]}"
    return outcome.payload.get("problem")
