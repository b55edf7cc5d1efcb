"""Output checks of a pair's child (core.child): a side's answer against the baseline's.

    call_checked   one untimed run() with the input rules checked (no aliasing, no mutation)
    verify         every side on one seed's inputs; the baseline against reference()
    check_timed    outputs kept during timing against the baseline on the same values; a
                   stateful baseline is stepped from a fresh setup() through the same calls
A variant's declared tolerance is bounded by the output's scale (core.verify).
"""
from __future__ import annotations

import time
from typing import Any

from core.benchmark import PairError, SideError, option
from core.integrity import alias_problem, mutation_problem
from core.record import Verification
from core.verify import compare, flatten, outputs_equal, plain_problem, snapshot


class Checks:
    """The output checks of core.child.PairSession (which provides the sides and the result)."""

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
            self.sync()
            return None
        before = None if inplace else clone(inputs)
        out = bench.run(given)
        self.sync()
        problem = plain_problem(out)
        if problem:
            raise SideError(problem)
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
        self.sync()
        if expected is not None:
            tolerance = option(self.baseline, "reference_tolerance", None) or self.tolerance("baseline")
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
        """A variant's output against the baseline's: a declared tolerance (the variant's
        or the pair's) is bounded by the output's scale (core.verify)."""
        tolerance = self.tolerance(name)
        check = compare(expected, actual, tolerance, bounded=tolerance is not None)
        record = self.examples[name].verification or Verification()
        self.examples[name].verification = record
        record.checks += 1
        record.max_abs_err = max(record.max_abs_err, check.max_abs_err)
        record.max_rel_err = max(record.max_rel_err, check.max_rel_err)
        record.tolerance_used = max(record.tolerance_used or 0.0, check.tolerance_used)
        record.rel_rms_err = max(record.rel_rms_err, check.rel_rms_err)
        record.rms_used = max(record.rms_used, check.rms_used)
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

    def answer(self, out: Any) -> Any:
        """A private copy of a run()'s output, on the ranks whose outputs are verified."""
        return snapshot(out) if self.answers_here else None

    def expected_after(self, sets: list[Any], stateful: bool) -> Any:
        """The baseline's answer on the last of `sets` (fresh copies of a timed call's values,
        so no cache can hit); a stateful baseline is stepped from a fresh setup() through the
        earlier ones first, as the checked side was."""
        if stateful:
            started = time.perf_counter()
            self.baseline.setup(self.baseline.ctx)
            self.integrity.state_setup_s += time.perf_counter() - started
            for values in sets[:-1]:
                self.baseline.run(values)
        expected = self.answer(self.baseline.run(sets[-1]))
        self.sync()
        return expected

    def check_timed(self, fresh: dict[str, Any], captured: dict[str, Any], index: int,
                    stateful: bool) -> set[str]:
        """Captured timed outputs against the baseline's output on the same values (each
        side's kept call had its own fresh values: core.fresh)."""
        expected = {}
        for name in captured:  # in the sides' order: every rank runs the baseline alike
            expected[name] = self.expected_after(fresh[name].checked_copies(), stateful)
            self.integrity.timed_seeds.append(fresh[name].checked_seed)
        if not self.answers_here:  # the baseline ran (its collectives need every rank); rank 0 checks
            return set()

        def where(name: str) -> str:
            return (f" for a timed call of round {index} (on the values of seed "
                    f"{fresh[name].checked_seed}, new to that call)")
        if "baseline" in captured:
            check = compare(expected["baseline"], captured["baseline"], self.tolerance("baseline"))
            if not check.ok:
                raise PairError(f"{self.file}: the baseline's output{where('baseline')} differs from "
                                f"its own output on a fresh copy of the same inputs: "
                                f"{check.message}; run() returns a result cached across calls")
        dropped = set()
        for name in list(self.sides):
            if name in captured:
                self.integrity.timed_output_checks += 1
                if not self.check_output(name, expected[name], captured[name],
                                         f"{where(name)}: the timed output differs from the "
                                         f"baseline on the same values (a result cached across "
                                         f"calls, or prepared in setup(), fails here)"):
                    dropped.add(name)
        return dropped
