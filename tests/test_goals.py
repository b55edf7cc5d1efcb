"""core.goals: each goal's own rules (floor, gate with its noise rule, stored entry, cell,
notes) on hand-made results, in well under a second; and the registry's promises."""
from __future__ import annotations

import pytest

from core import gate as verdict
from core import goals
from core.compile_time import ColdStart
from core.decided import Floor
from core.goodput import GoodputStats
from core.memory import Footprint
from tests.test_honest_headlines import pair_result, side


def example(goal: str, **declared):
    result = pair_result(side(1.0), side(1.0), (0.99, 1.01))
    ex = result.examples[0]
    ex.goal, ex.baseline = goal, result.baseline
    for key, value in declared.items():
        setattr(ex, key, value)
    return ex, result


def served(rps: float) -> GoodputStats:
    return GoodputStats(requests=10, duration_s=1.0, ttft_p50_s=0.1, ttft_p99_s=0.2,
                        tpot_p50_s=0.01, tpot_p99_s=0.02, tokens_per_s=100.0, met=int(rps),
                        goodput_rps=rps)


# --- the registry ------------------------------------------------------------------------

def test_every_goal_is_registered_once_with_its_own_stored_field():
    assert goals.NAMES == ("speed", "memory", "compile_time", "goodput", "simulated_cost")
    fields = [g.field for g in goals.GOALS.values()]
    assert len(set(fields)) == len(fields) and fields[0] == "speedup"
    assert [g.name for g in goals.GOALS.values() if g.gates_time] == ["speed"]


def test_an_unknown_goal_is_a_contract_error_naming_the_file():
    class Odd:
        goal = "latency"
    with pytest.raises(TypeError, match=r"ch90/optimized_x.py: goal must be one of .*'latency'"):
        goals.check_contract(Odd(), "ch90/optimized_x.py")


def test_timing_floors_only_when_every_variant_is_gated_on_time():
    floor = Floor(1.8, 1.1)
    assert goals.timing_floors({"a": floor}, {"a": "speed"}) == {"a": floor}
    assert goals.timing_floors({"a": floor}, {"a": "speed", "b": "speed"}) == {}  # b has none
    assert goals.timing_floors({"a": floor, "b": floor}, {"a": "speed", "b": "goodput"}) == {}
    assert goals.time_is_context({"a": "memory", "b": "goodput"})
    assert not goals.time_is_context({"a": "memory", "b": "speed"})


# --- speed ---------------------------------------------------------------------------------

def test_speed_floor_uses_the_stored_cpu_bound_tolerance_and_refuses_negatives():
    speed = goals.goal_of("speed")
    assert speed.floor({"speedup": 2.0}) == Floor(1.8, 1.1)
    assert speed.floor({"speedup": 2.0, "cpu_bound": "x"}) == Floor(1.5, 1.25)
    assert speed.floor({"speedup": 2.0, "tolerance": 0.3}) == Floor(pytest.approx(1.4), 1.3)
    assert speed.floor({"speedup": 0.8, "declarations": {"negative_result": "why"}}) is None
    assert speed.floor({"speedup": 2.0, "goal": "memory", "memory_ratio": 2.0}) is None


def test_speed_gate_is_noisy_with_too_few_samples_or_a_wide_interval():
    ex, result = example("speed")
    assert goals.goal_of("speed").gate(ex, {"speedup": 1.0}, result).status == "pass"
    assert ex.noisy == ""
    ex.speedup_ci = (0.8, 1.2)  # wider than ±5%
    goals.goal_of("speed").gate(ex, None, result)
    assert "wider than" in ex.noisy
    ex.speedup_ci, ex.cpu_bound = (0.9, 1.12), "host"  # within a cpu_bound pair's ±12.5%
    goals.goal_of("speed").gate(ex, None, result)
    assert ex.noisy == ""


# --- memory --------------------------------------------------------------------------------

def test_memory_gate_judges_the_peak_saved_and_stores_both_peaks():
    memory = goals.goal_of("memory")
    ex, result = example("memory")
    assert memory.gate(ex, None, result).status == "new"  # nothing measured (a CPU run)
    ex.baseline.memory, ex.timing.memory = Footprint(300, 100), Footprint(150, 50)
    assert memory.ratio(ex) == 2.0
    stored = {"speedup": 1.0, "goal": "memory", "memory_ratio": 2.5}  # floor 2.25
    assert memory.gate(ex, stored, result).status == "regression"
    assert memory.entry(ex) == {"goal": "memory", "memory_ratio": 2.0, "baseline_peak_bytes": 400,
                                "optimized_peak_bytes": 200}
    assert memory.cell(ex, "1.00x").startswith("2.00x less memory; time 1.00x")
    assert memory.notes(ex)[0].startswith("MEMORY ch90:x (goal memory, gated on it)")
    ex.negative_result = "slower here by design"  # reported, never gated: the note says so
    assert memory.notes(ex)[0].startswith(
        "MEMORY ch90:x (goal memory, a declared negative result: not gated)")


# --- compile_time -------------------------------------------------------------------------

def test_compile_time_gate_noise_rule_is_the_cpu_bound_width():
    """The ratio's interval (slowest optimized vs fastest baseline cold start and back) may
    span 1 + CPU_BOUND_TOLERANCE; wider is noisy (never stored)."""
    compile_time = goals.goal_of("compile_time")
    ex, result = example("compile_time")
    ex.baseline.cold_starts = [ColdStart(3.0, 0.0), ColdStart(3.2, 0.0), ColdStart(3.1, 0.0)]
    ex.timing.cold_starts = [ColdStart(1.0, 0.0), ColdStart(1.05, 0.0), ColdStart(1.1, 0.0)]
    compile_time.gate(ex, None, result)  # interval 2.73-3.2: 1.17 wide
    assert ex.noisy == ""
    ex.timing.cold_starts = [ColdStart(1.0, 0.0), ColdStart(1.05, 0.0), ColdStart(1.4, 0.0)]
    compile_time.gate(ex, None, result)  # 2.14-3.2: 1.49 wide
    assert "cold-start ratio" in ex.noisy


def test_compile_time_counts_imports_in_the_cold_start():
    start = ColdStart(setup_s=2.0, first_call_s=0.5, import_s=1.5)
    assert start.total_s == 4.0
    assert ColdStart(**start.to_dict()) == start


# --- goodput -------------------------------------------------------------------------------

def test_goodput_gate_noise_rule_is_the_cpu_bound_width_of_the_round_ratios():
    goodput = goals.goal_of("goodput")
    ex, result = example("goodput")
    ex.baseline.goodput = [served(4.0), served(4.0), served(4.0)]
    ex.timing.goodput = [served(8.0), served(8.4), served(9.0)]  # ratios 2.0-2.25: 1.125 wide
    assert goodput.gate(ex, {"speedup": 1.0, "goal": "goodput", "goodput_ratio": 2.0},
                        result).status == "pass"
    assert ex.noisy == ""
    ex.timing.goodput = [served(8.0), served(8.4), served(10.4)]  # 2.0-2.6: 1.3 wide
    goodput.gate(ex, None, result)
    assert "goodput ratio" in ex.noisy
    ex.baseline.goodput = [served(0.0)] * 3  # the baseline met no request's SLO
    assert goodput.gate(ex, None, result).status == "new" and "unbounded" in ex.noisy


def test_goodput_floor_uses_the_cpu_bound_tolerance_unless_the_entry_sets_one():
    goodput = goals.goal_of("goodput")
    assert goodput.floor({"speedup": 1, "goal": "goodput", "goodput_ratio": 2.0}) == Floor(1.5, 1.25)
    assert goodput.floor({"speedup": 1, "goal": "goodput", "goodput_ratio": 2.0,
                          "tolerance": 0.1}) == Floor(1.8, 1.25)
    assert goodput.floor({"speedup": 2.0}) is None


# --- simulated_cost ------------------------------------------------------------------------

def test_simulated_cost_gate_noise_rule_is_five_percent_over_the_seeds():
    simulated = goals.goal_of("simulated_cost")
    ex, result = example("simulated_cost")
    ex.baseline.simulated_costs = [2.0, 2.0, 2.0]
    ex.timing.simulated_costs = [1.0, 1.02, 0.98]  # ratios 1.96-2.04: within ±5%
    assert simulated.ratio(ex) == pytest.approx(2.0)
    simulated.gate(ex, None, result)
    assert ex.noisy == ""
    ex.timing.simulated_costs = [1.0, 1.1, 0.95]  # 1.82-2.11: 1.16 wide
    simulated.gate(ex, None, result)
    assert "simulated cost ratio" in ex.noisy


def test_simulated_cost_needs_the_model_on_the_pair():
    class NoModel:
        goal, simulated = "simulated_cost", "a fleet"
    with pytest.raises(TypeError, match="simulated_cost\\(inputs\\)"):
        goals.check_contract(NoModel(), "ch90/optimized_x.py")


@pytest.mark.parametrize("goal", goals.NAMES)
def test_every_goal_gates_a_declared_negative_result_as_negative(goal):
    ex, result = example(goal, negative_result="slower here by design")
    ex.baseline.memory, ex.timing.memory = Footprint(1, 1), Footprint(2, 2)
    ex.baseline.cold_starts, ex.timing.cold_starts = [ColdStart(1.0, 0.0)], [ColdStart(2.0, 0.0)]
    ex.baseline.goodput, ex.timing.goodput = [served(4.0)], [served(2.0)]
    ex.baseline.simulated_costs, ex.timing.simulated_costs = [1.0], [2.0]
    found = goals.goal_of(goal).gate(ex, {"speedup": 1.0, goals.goal_of(goal).field: 1.0}, result)
    assert found.status == "negative"
    assert verdict.FAILING == ("regression", "rules changed")


# --- the early stop of goals measured in whole rounds, on fixed numbers ----------------------

def test_goodput_replays_stop_once_two_rounds_bound_the_median_above_the_floor():
    from types import SimpleNamespace

    goodput = goals.goal_of("goodput")
    session = SimpleNamespace(sides={"x": None})
    found = {"baseline": [served(4.0), served(4.0)], "x": [served(8.0), served(8.2)]}
    assert goodput._decided(session, found, {"x": Floor(1.5, 1.25)})  # 2.0-2.05: above 1.5
    assert not goodput._decided(session, found, {"x": Floor(2.5, 1.25)})  # the third could pass
    found["x"] = [served(6.0), served(9.0)]  # 1.5-2.25: too wide to be a result yet
    assert not goodput._decided(session, found, {"x": Floor(1.2, 1.25)})
    assert not goodput._decided(session, {"baseline": [served(4.0)], "x": [served(8.0)]},
                                {"x": Floor(1.5, 1.25)})  # one of three bounds nothing


def test_cold_starts_stop_once_two_rounds_bound_the_ratio_above_the_floor(tmp_path):
    """CompileTime.outside with a fake child runner: fixed cold starts (4 s against 2 s), so
    two rounds bound the ratio at 2.0; with a floor of 1.5 the third round is not run, with
    none all three are. Every variant's first answer is compared (a fake compare passes)."""
    from types import SimpleNamespace

    ran: list[str] = []

    def run_child(args, *rest, **kwargs):
        if args[0] == "--compare":
            return SimpleNamespace(payload={"problem": None}, problem=None, tail="")
        side = args[2]
        ran.append(side)
        work = 3.0 if side == "baseline" else 1.0
        return SimpleNamespace(payload={"setup_s": work, "first_call_s": 0.0, "import_s": 1.0},
                               problem=None, tail="")

    def outside(floors):
        ran.clear()
        ex, result = example("compile_time")
        ex.baseline.setup_s = ex.timing.setup_s = 0.0
        job = goals.Outside(result, tmp_path / "spec.json", tmp_path, tmp_path, "ch90__x", 60.0,
                            floors, lambda line: None, run_child)
        goals.goal_of("compile_time").outside(job, ["x"])
        return ex
    ex = outside({"x": Floor(1.5, 1.25)})
    assert ran == ["x", "baseline"] * 2 and ex.status == "ok"  # variants first in each round
    assert goals.goal_of("compile_time").ratio(ex) == 2.0
    ex = outside({})
    assert ran == ["x", "baseline"] * 3
