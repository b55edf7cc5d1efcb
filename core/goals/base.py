"""The interface every goal implements (core.goals lists them), and what several share."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from core import calibration, gate as verdict
from core.decided import Floor

if TYPE_CHECKING:
    from core.benchmark import Benchmark
    from core.record import ExampleResult, PairResult


@dataclass
class Outside:
    """What a goal measured outside the pair's child needs from the runner (cold starts)."""

    result: PairResult
    spec_path: Path  # the pair's SPEC.json, as its child got it
    root: Path  # the folder holding the chapter packages
    logs: Path  # the run's logs/ folder
    safe: str  # the pair's id as a file name
    timeout_s: float
    floors: dict[str, Floor]  # a gate run's floors (core.record.PairSpec.floors); {} otherwise
    note: Callable[[str], None]  # a progress line for the user
    run_child: Callable[..., Any]  # core.process.run_child (the runner's, so tests may fake it)


class Goal:
    """One goal's rules. Subclasses override what differs from speed's defaults."""

    name = ""
    field = ""  # the stored, gated ratio of an expectation entry ("speedup", "memory_ratio")
    what = ""  # how gate messages name the ratio ("memory saved ")
    gates_time = False  # the timed speedup is the gated number (else the time is context)
    # its ratio comes from work paced by the host in real time (a replay driven by one Python
    # thread), so a result stored on another host says so (core.expectations.other_host)
    host_paced = False
    noun = "result"  # what a simulated pair's simulation yields, in its note
    pair_owned: tuple[str, ...] = ()  # methods only the baseline may define (core.rules)

    # --- the contract (the parent's pair loading; TypeError names the file) -------------
    def check_contract(self, bench: Benchmark, origin: str) -> None:
        """Raise TypeError when `bench` lacks what this goal needs."""

    # --- in the pair's child (core.child.PairSession) ------------------------------------
    def before_setup(self, session: Any, names: list[str]) -> None:
        """Before any side's setup(); `names`: this goal's variants."""

    def after_setup(self, session: Any, names: list[str]) -> None:
        """After every side's setup(), before verification."""

    def after_timing(self, session: Any, names: list[str]) -> None:
        """After the timed rounds, with the side results built."""

    # --- in the runner ------------------------------------------------------------------
    def outside(self, job: Outside, names: list[str]) -> None:
        """Measurements in processes of their own, after the pair's child (cold starts)."""

    def tolerance(self, entry: dict[str, Any] | None, cpu_bound: str = "") -> float:
        """The gate's tolerance when the stored entry sets none: the one A/A runs measured
        for this GPU model and family (core.calibration), else core.gate's default."""
        bound = cpu_bound or (entry or {}).get("cpu_bound", "")
        measured = calibration.measured_tolerance(bound)
        if measured is not None:
            return measured
        return verdict.CPU_BOUND_TOLERANCE if bound else verdict.DEFAULT_TOLERANCE

    def floor(self, entry: dict[str, Any]) -> Floor | None:
        """The floor a gate run may stop early against (core.decided), from a stored entry;
        None where nothing of this goal is stored or the entry is not gated."""
        return None

    def ratio(self, ex: ExampleResult) -> float | None:
        """The gated ratio measured in this run (None: not measured)."""
        return None

    def lowest(self, ex: ExampleResult) -> float | None:
        """The low end of the gated ratio's interval where --update-expectations should judge
        it (one reaching below 1x is parity, stored only when declared: core.runner)."""
        return None

    def gate(self, ex: ExampleResult, entry: dict[str, Any] | None, result: PairResult) -> verdict.GateResult:
        """The verdict on this run's ratio; sets `ex.noisy` when it is too noisy to store."""
        raise NotImplementedError

    def entry(self, ex: ExampleResult) -> dict[str, Any]:
        """What --update-expectations stores for this goal beside the speedup: the goal, its
        ratio and each side's own figure (nothing for the speed, whose ratio is the speedup)."""
        ratio = self.ratio(ex)
        if self.gates_time or ratio in (None, float("inf")):
            return {}
        return {"goal": self.name, self.field: round(ratio, 4), **self.sides_figures(ex)}

    def sides_figures(self, ex: ExampleResult) -> dict[str, Any]:
        """Each side's own measured figure, stored beside the ratio for a reader."""
        return {}

    gain = ""  # how the table names the gated ratio ("less memory": "2.00x less memory")

    def cell(self, ex: ExampleResult, time_cell: str) -> str:
        """The table's speedup cell, given the time's own cell: the gated ratio first, for a
        goal other than the speed (`2.00x less memory; time 1.01x [...]`)."""
        if self.gates_time:
            return time_cell
        ratio = self.ratio(ex)
        saved = f"{ratio:.2f}x {self.gain}" if ratio is not None else f"{self.name} not measured"
        return f"{saved}; time {time_cell}"

    def gate_role(self, ex: ExampleResult) -> str:
        """The note's words for what the gate does with this goal's ratio: a declared
        negative result is reported and stored, never gated."""
        if ex.negative_result:
            return f"goal {self.name}, a declared negative result: not gated"
        return f"goal {self.name}, gated on it"

    def notes(self, ex: ExampleResult) -> list[str]:
        """Lines for the report and summary.md."""
        return []

    def host_bound_advice(self) -> str:
        return "if the GPU's time is what the pair is about, declare timing_mode = 'graph'"

    def model_key(self, ex: ExampleResult) -> str:
        """What this result depends on instead of the machine that ran it (its expectations
        key, core.expectations.pair_key); "" when the machine is in the number."""
        return ""


def stored_ratio(entry: dict[str, Any] | None, goal: Goal) -> float | None:
    value = (entry or {}).get(goal.field)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def round_floor(goal: Goal, entry: dict[str, Any]) -> Floor | None:
    """The floor of a goal gated on a median of whole rounds (goodput replays, cold starts),
    with the tolerance those gates use (host work: the cpu_bound one unless the entry sets
    its own); None when nothing of that goal is stored or the entry is a negative result."""
    stored = stored_ratio(entry, goal)
    if entry.get("goal") != goal.name or stored is None:
        return None
    if (entry.get("declarations") or {}).get("negative_result"):
        return None
    tolerance = float(entry.get("tolerance", verdict.CPU_BOUND_TOLERANCE))
    return Floor(verdict.floor_of(stored, tolerance), 1 + verdict.CPU_BOUND_TOLERANCE)


def cut_short(done: list, full: int) -> str:
    """Said when a gate run stopped its rounds early (core.decided.median_bounds)."""
    if 1 < len(done) < full:
        return (f"; {len(done)} of {full}: the rest could not have moved the median below "
                f"the floor")
    return ""
