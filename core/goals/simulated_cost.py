"""Goal "simulated_cost": a `simulated` pair whose gain is the modelled time of the work it
plans, not the planning. The pair's cost model, `simulated_cost(inputs) -> seconds` (lower is
better), is the baseline's, shared by every side (a variant that brings its own fails at
load); each side prices its own plan with it on the inputs of SEEDS fresh seeds, the same for
every side, and the median of the per-seed ratios baseline / optimized is gated. The model is
deterministic for given inputs, so the interval is the spread of those ratios.
"""
from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from core import gate as verdict
from core.goals.base import Goal

if TYPE_CHECKING:
    from core.benchmark import Benchmark
    from core.record import ExampleResult, PairResult

SEEDS = 3  # input seeds each side prices its modelled work on


class SimulatedCost(Goal):
    name = "simulated_cost"
    field = "simulated_cost_ratio"
    pair_owned = ("simulated_cost", "simulated_key")  # the model, and what it is stored under
    gain = "less simulated time"
    what = "simulated cost "

    def check_contract(self, bench: Benchmark, origin: str) -> None:
        if not (getattr(bench, "simulated", "") and callable(getattr(bench, "simulated_cost", None))):
            raise TypeError(f"{origin}: goal 'simulated_cost' needs `simulated` (what the pair "
                            f"simulates, from which costs) and simulated_cost(inputs) -> seconds "
                            f"of the modelled work on those inputs (define it in the stem's "
                            f"common class, so the baseline has it too)")

    def after_timing(self, session: Any, names: list[str]) -> None:
        from core.inputs import clone

        sides = ["baseline", *names]
        costs: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(SEEDS):
            seed = session.new_seed()
            session.integrity.verify_seeds.append(seed)
            inputs = session.baseline.make_inputs(seed)
            for name in [n for n in sides if n == "baseline" or n in session.sides]:
                try:
                    cost = float(session.bench(name).simulated_cost(clone(inputs)))
                    if not cost > 0:
                        raise ValueError(f"simulated_cost returned {cost!r}, not a positive "
                                         f"number of seconds")
                except Exception as exc:  # noqa: BLE001
                    session.side_raised(name, exc, "simulated_cost()")
                    continue
                costs[name].append(cost)
        session.check_guard("while pricing the simulated work")
        for name, side in session.side_results().items():
            if name in costs:
                side.simulated_costs = costs[name]

    def model_key(self, ex: ExampleResult) -> str:
        """`sim_<simulated_key>` where the pair names its model: its modelled cost needs no GPU."""
        key = ex.declarations.simulated_key
        return f"sim_{key}" if key else ""

    def ratios(self, ex: ExampleResult) -> list[float]:
        """Per input seed, the baseline's simulated seconds over the optimized side's."""
        if ex.baseline is None or ex.timing is None:
            return []
        return [b / o for b, o in zip(ex.baseline.simulated_costs, ex.timing.simulated_costs) if o > 0]

    def ratio(self, ex: ExampleResult) -> float | None:
        """The median of the per-seed ratios (2.0: the modelled work takes half the time)."""
        ratios = self.ratios(ex)
        return statistics.median(ratios) if ratios else None

    def gate(self, ex: ExampleResult, entry: dict[str, Any] | None, result: PairResult) -> verdict.GateResult:
        ratio, ratios = self.ratio(ex), self.ratios(ex)
        if ratio is None:
            return verdict.GateResult("new", "goal simulated_cost: no simulated costs; not gated")
        interval = (min(ratios), max(ratios))
        if interval[1] / interval[0] > verdict.MAX_INTERVAL_RATIO:
            ex.noisy = (f"simulated cost ratio {interval[0]:.2f}-{interval[1]:.2f} over "
                        f"{len(ratios)} input seeds is wider than ±5%")
        return verdict.gate(entry, ratio, interval, negative_result=ex.negative_result,
                            measure=self.field, what=self.what)

    def sides_figures(self, ex: ExampleResult) -> dict[str, Any]:
        return {"baseline_simulated_s": round(statistics.median(ex.baseline.simulated_costs), 9),
                "optimized_simulated_s": round(statistics.median(ex.timing.simulated_costs), 9)}

    def notes(self, ex: ExampleResult) -> list[str]:
        if self.ratio(ex) is None:
            return []
        base, opt = ex.baseline.simulated_costs, ex.timing.simulated_costs
        return [f"SIMULATED COST {ex.id} ({self.gate_role(ex)}): the modelled "
                f"work takes {statistics.median(base) * 1e3:.3g} ms → "
                f"{statistics.median(opt) * 1e3:.3g} ms (median over {len(opt)} input "
                f"seeds, the same for both sides); the time column is the planning "
                f"the pair does for real, {ex.speedup:.2f}x"]
