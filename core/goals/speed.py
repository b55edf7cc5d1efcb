"""Goal "speed": the speedup, baseline median time over the optimized side's, is gated.

Its interval is the bootstrap over the interleaved rounds (core.stats); a gate run may stop
the rounds once every variant's interval clears its floor (core.decided). A pair whose time
is host CPU work (`cpu_bound`) is gated with the wider CPU_BOUND_TOLERANCE.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core import gate as verdict
from core.decided import Floor
from core.goals.base import Goal

if TYPE_CHECKING:
    from core.record import ExampleResult, PairResult

SETUP_NOTE_S = 1.0  # an optimized setup() this much longer than the baseline's gets a line


class Speed(Goal):
    name = "speed"
    field = "speedup"
    gates_time = True

    def floor(self, entry: dict[str, Any]) -> Floor | None:
        if entry.get("goal", self.name) != self.name or "speedup" not in entry:
            return None
        if (entry.get("declarations") or {}).get("negative_result"):
            return None
        tolerance = float(entry.get("tolerance", self.tolerance(entry)))
        return Floor(verdict.floor_of(float(entry["speedup"]), tolerance),
                     max(verdict.MAX_INTERVAL_RATIO, 1 + tolerance))

    def ratio(self, ex: ExampleResult) -> float | None:
        return ex.speedup

    def lowest(self, ex: ExampleResult) -> float | None:
        return ex.speedup_ci[0] if ex.speedup_ci else None

    def gate(self, ex: ExampleResult, entry: dict[str, Any] | None, result: PairResult) -> verdict.GateResult:
        tolerance = self.tolerance(None, ex.cpu_bound)
        ex.noisy = verdict.noisy_reason((ex.baseline.stats.n, ex.timing.stats.n), tuple(ex.speedup_ci),
                                result.stop_reason, tolerance)
        return verdict.gate(entry, ex.speedup, tuple(ex.speedup_ci), default_tolerance=tolerance,
                            negative_result=ex.negative_result)

    def notes(self, ex: ExampleResult) -> list[str]:
        """SETUP: an optimized side that pays for its speed up front (torch.compile,
        autotuning, graph capture) says what it paid; the timed median never contains setup()."""
        base = ex.baseline.setup_s if ex.baseline is not None else None
        opt = ex.timing.setup_s if ex.timing is not None else None
        if base is None or opt is None or opt - base < SETUP_NOTE_S:
            return []
        return [f"SETUP {ex.id}: setup() took {base:.1f} s → {opt:.1f} s (compiling, autotuning "
                f"or capturing is paid once, before timing; compiler caches as this machine had "
                f"them)"]
