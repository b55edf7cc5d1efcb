"""Goal "memory": the peak device memory saved (baseline peak over the optimized side's) is
gated; each side's footprint is measured once after setup (core.memory). Allocator counts do
not vary between runs the way times do: the interval is the value itself.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core import gate as verdict
from core.goals.base import Goal

if TYPE_CHECKING:
    from core.record import ExampleResult, PairResult


class Memory(Goal):
    name = "memory"
    field = "memory_ratio"
    gain = "less memory"
    what = "memory saved "

    def before_setup(self, session: Any, names: list[str]) -> None:
        from core.memory import prime_libraries

        if session.device.startswith("cuda"):
            prime_libraries()  # library workspaces are nobody's footprint (core.memory)

    def after_setup(self, session: Any, names: list[str]) -> None:
        """Each side's footprint, sides in order on every rank; rank 0 keeps the largest of
        any rank. Kept on the session until the side results exist. Every call gets inputs
        no earlier call had, and the measured call's output must match the baseline's on
        them: a side cannot look frugal by skipping its work where memory is measured."""
        from core.benchmark import option
        from core.inputs import clone
        from core.memory import CALLS, CudaMeter, footprint, largest

        if not session.device.startswith("cuda"):
            return
        sets = [session.baseline.make_inputs(session.new_seed()) for _ in range(CALLS)]
        meter = CudaMeter()
        mine, answers = {}, {}
        for name in ["baseline", *session.sides]:
            bench = session.bench(name)
            given = [clone(s) for s in sets] if option(bench, "inplace", False) else sets
            try:
                mine[name] = footprint(lambda i: bench.run(given[i]), session.setup_bytes.get(name, 0),
                                       meter, keep=lambda out: answers.__setitem__(name, session.answer(out)))
            except Exception as exc:  # noqa: BLE001
                session.side_raised(name, exc, "run() (memory measurement)")
            session.check_guard("during run()", name)
            del given
        del sets
        if (expected := answers.get("baseline")) is not None:  # None: ranks that return none
            for name in [n for n in session.sides if answers.get(n) is not None]:
                session.check_output(name, expected, answers[name], " on the memory measurement's last call")
        every = session.ranks.all(mine) if session.ranks.distributed else [mine]
        session.goal_data[self.name] = {name: largest([f[name] for f in every if name in f])
                                        for name in mine}

    def after_timing(self, session: Any, names: list[str]) -> None:
        found = session.goal_data.get(self.name, {})
        for name, side in session.side_results().items():
            side.memory = found.get(name)

    def ratio(self, ex: ExampleResult) -> float | None:
        """Baseline peak device memory over the optimized side's (2.0: half the memory)."""
        if ex.baseline is None or ex.timing is None:
            return None
        if ex.baseline.memory is None or ex.timing.memory is None:
            return None
        return ex.baseline.memory.peak_bytes / max(1, ex.timing.memory.peak_bytes)

    def gate(self, ex: ExampleResult, entry: dict[str, Any] | None, result: PairResult) -> verdict.GateResult:
        ratio = self.ratio(ex)
        if ratio is None:
            return verdict.GateResult("new", "goal memory: device memory is measured on CUDA devices "
                                     "only; not gated here")
        return verdict.gate(entry, ratio, (ratio, ratio), negative_result=ex.negative_result,
                            measure=self.field, what=self.what)

    def sides_figures(self, ex: ExampleResult) -> dict[str, Any]:
        return {"baseline_peak_bytes": ex.baseline.memory.peak_bytes,
                "optimized_peak_bytes": ex.timing.memory.peak_bytes}

    def notes(self, ex: ExampleResult) -> list[str]:
        from core.memory import mib

        if self.ratio(ex) is None:
            return []
        base, opt = ex.baseline.memory, ex.timing.memory
        return [f"MEMORY {ex.id} ({self.gate_role(ex)}): peak device memory "
                f"{mib(base.peak_bytes)} → {mib(opt.peak_bytes)} per GPU "
                f"(held {mib(base.resident_bytes)} → {mib(opt.resident_bytes)}, one "
                f"call's peak on top {mib(base.call_bytes)} → {mib(opt.call_bytes)}); "
                f"time {ex.speedup:.2f}x"]
