"""Goal "simulated_cost": a simulated pair is gated on the modelled time of the work it plans
(ch17 moe_router_topology: where experts live sets the all-to-all's bytes), not on the
planning's own time, which is the same work on both sides."""
from __future__ import annotations

import json

import pytest

from core import gate as verdict
from core.goals import ratio_of

PLACEMENT_COMMON = '''
import torch

from core.benchmark import Benchmark, Workload

TOKENS, GPUS = 4096, 8


class Placement(Benchmark):
    """Toy: each token goes to one expert; sending it off its own GPU costs 1 µs."""
    supports_cpu = True
    simulated = "a toy placement: remote tokens priced at 1 µs each"

    def gpu_of_expert(self, expert):
        raise NotImplementedError

    def make_inputs(self, seed):
        gen = torch.Generator().manual_seed(seed)
        home = torch.randint(0, GPUS, (TOKENS,), generator=gen)
        # tokens mostly want an expert that lives with them under the good placement
        near = torch.rand(TOKENS, generator=gen) < 0.8
        expert = torch.where(near, home * 2, torch.randint(0, 2 * GPUS, (TOKENS,), generator=gen))
        return {"home": home, "expert": expert}

    def run(self, inputs):
        return torch.bincount(inputs["expert"], minlength=2 * GPUS)  # the plan both agree on

    def simulated_cost(self, inputs):
        remote = self.gpu_of_expert(inputs["expert"]) != inputs["home"]
        return float(remote.sum()) * 1e-6

    def workload(self):
        return Workload(units=TOKENS, unit_name="tokens")
'''
PLACEMENT_BASELINE = '''
from ._placement_common import GPUS, Placement


class RoundRobin(Placement):
    def gpu_of_expert(self, expert):
        return expert % GPUS


get_benchmark = RoundRobin
'''
PLACEMENT_LOCAL = '''
from ._placement_common import Placement


class Local(Placement):
    goal = "simulated_cost"

    def gpu_of_expert(self, expert):
        return expert // 2


get_benchmark = Local
'''
PLACEMENT_BROKEN = '''
from ._placement_common import Placement


class Broken(Placement):
    goal = "simulated_cost"

    def gpu_of_expert(self, expert):
        return expert[:0]  # no placement: the pair's model cannot price it


get_benchmark = Broken
'''


@pytest.fixture(scope="module")
def placed(tmp_path_factory):
    from core.discovery import select
    from core.runner import RunOptions, run_suite
    from tests.conftest import write_chapter

    root = tmp_path_factory.mktemp("placement") / "chapters"
    chapter = write_chapter(root, "ch96", {"_placement_common.py": PLACEMENT_COMMON,
                                           "baseline_placement.py": PLACEMENT_BASELINE,
                                           "optimized_placement.py": PLACEMENT_LOCAL,
                                           "optimized_placement_broken.py": PLACEMENT_BROKEN})
    options = RunOptions(iterations=3, warmup=1, timeout_s=120, output_dir=root.parent / "runs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(verdict, "MIN_SAMPLES", 1)
        record = run_suite(select(["ch96"], root), options)
    return chapter, record, {ex.name: ex for ex in record.rows}


def test_the_simulated_cost_is_measured_on_shared_seeds_and_gated_not_the_time(placed):
    from core.hardware import fingerprint
    from core.report import notes, row
    from core.runner import expectation_entry

    _, _, rows = placed
    ex = rows["placement"]
    assert ex.status == "ok", ex.reason
    assert len(ex.baseline.simulated_costs) == len(ex.timing.simulated_costs) == 3
    # round robin sends ~7/8 of the tokens away, the local placement ~0.8·0 + 0.2·7/8
    assert 4.0 < ratio_of(ex) < 6.0
    assert ex.expectation.status == "new" and "simulated cost" not in ex.expectation.message
    assert row(ex)[3].startswith(f"{ratio_of(ex):.2f}x less simulated time; time ")
    assert any(line.startswith("SIMULATED COST ch96:placement (goal simulated_cost")
               for line in notes([ex]))
    entry = expectation_entry(ex, fingerprint())
    assert entry["goal"] == "simulated_cost"
    assert entry["simulated_cost_ratio"] == pytest.approx(ratio_of(ex), rel=1e-3)
    assert entry["baseline_simulated_s"] > entry["optimized_simulated_s"] > 0


def test_the_gate_judges_the_simulated_cost_ratio(placed):
    from core import goals

    def simulated_cost_gate(ex, entry):
        return goals.goal_of("simulated_cost").gate(ex, entry, record.pairs[0])
    _, record, rows = placed
    ex = rows["placement"]
    ratio = ratio_of(ex)
    passing = simulated_cost_gate(ex, {"speedup": 1.0, "simulated_cost_ratio": ratio})
    assert passing.status == "pass" and passing.message.startswith("simulated cost ")
    # a stored ratio far above what the placement now saves: its whole interval is below
    failing = simulated_cost_gate(ex, {"speedup": 1.0, "simulated_cost_ratio": ratio * 2})
    assert failing.status == "regression"


def test_a_side_whose_model_returns_no_cost_fails_alone(placed):
    _, record, rows = placed
    assert rows["placement_broken"].status == "failed"
    assert "in simulated_cost()" in rows["placement_broken"].reason
    assert rows["placement"].status == "ok"
    saved = json.loads((record.run_dir / "results.json").read_text())
    from core.record import RunRecord
    again = {ex.name: ex for ex in RunRecord.from_dict(saved).rows}
    assert ratio_of(again["placement"]) == pytest.approx(ratio_of(rows["placement"]))


def test_goal_simulated_cost_needs_a_model_and_the_simulated_label():
    from core.benchmark import Benchmark, validate
    from core.goals import check_contract

    class Unlabelled(Benchmark):
        goal = "simulated_cost"

        def make_inputs(self, seed):
            return None

        def run(self, inputs):
            return None

        def simulated_cost(self, inputs):
            return 1.0

    with pytest.raises(TypeError, match="goal 'simulated_cost' needs `simulated`"):
        validate(Unlabelled(), "ch96/optimized_x.py")
        check_contract(Unlabelled(), "ch96/optimized_x.py")
    Unlabelled.simulated = "a model"
    validate(Unlabelled(), "ch96/optimized_x.py")
    check_contract(Unlabelled(), "ch96/optimized_x.py")
    del Unlabelled.simulated_cost
    with pytest.raises(TypeError, match="simulated_cost"):
        validate(Unlabelled(), "ch96/optimized_x.py")
        check_contract(Unlabelled(), "ch96/optimized_x.py")


def test_a_variant_bringing_its_own_cost_model_fails():
    """The model is the pair's (core.rules): a variant pricing its own plan with a model of
    its own (free transfers) is refused before anything runs."""
    from core.rules import variant_problem

    namespace: dict = {}
    exec(PLACEMENT_COMMON, namespace)
    placement = namespace["Placement"]
    own = type("OwnModel", (placement,), {"simulated_cost": lambda self, inputs: 1e-9})
    assert "defines its own simulated_cost()" in variant_problem(placement(), own(), "f")
