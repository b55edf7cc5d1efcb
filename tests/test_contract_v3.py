"""Contract v3: a variant cannot choose the rules that judge it (core.rules, core.verify's
bounds, core.declarations and the gate). Fast unit tests; the planted pairs in tests/planted
run the same rules end to end (tests/test_planted.py)."""
from __future__ import annotations

import math

import pytest
import torch

from core.benchmark import Benchmark, Tolerance, Workload
from core.declarations import Declarations, rules_changed
from core.decided import Floor
from core.record import PairSpec, VariantSpec
from core.rules import variant_problem, workload_problem
from core.verify import MAX_ATOL_OF_RMS, MAX_RTOL, RMS_SHARE, compare, tolerance_problem
from tests.test_honest_headlines import pair_result, side


# --- tolerance: bounded by the output's scale, and a scale-aware error --------------------

def test_a_declared_atol_far_above_the_outputs_rms_is_refused_with_the_numbers():
    expected = torch.ones(1000)  # RMS 1.0
    half = expected.clone()
    half[500:] = 0.0  # half the work
    check = compare(expected, half, Tolerance(0.0, 2.0), bounded=True)
    assert not check.ok and "atol=2 is 2x the RMS" in check.message
    # unbounded, that tolerance lets the missing half through (0.71 < half of atol / RMS = 2)
    assert compare(expected, half, Tolerance(0.0, 2.0)).ok
    # within the bound (atol = RMS), the relative RMS error catches the missing half
    within = compare(expected, half, Tolerance(0.0, 1.0), bounded=True)
    assert not within.ok and "relative RMS error 0.707" in within.message
    assert tolerance_problem(Tolerance(0.0, MAX_ATOL_OF_RMS * 0.99), 1.0) is None
    assert tolerance_problem(Tolerance(0.0, MAX_ATOL_OF_RMS * 1.01), 1.0) is not None


def test_a_declared_rtol_above_the_widest_honest_one_is_refused():
    assert tolerance_problem(Tolerance(MAX_RTOL, 0.0), 1.0) is None
    assert "rtol=0.2" in tolerance_problem(Tolerance(0.2, 0.0), 1.0)


def test_an_answer_off_everywhere_within_the_elementwise_tolerance_fails_the_rms_check():
    gen = torch.Generator().manual_seed(0)
    exact = torch.randn(4096, generator=gen, dtype=torch.float64)
    tol = Tolerance(rtol=0.05, atol=0.3)
    off = exact + 0.98 * (tol.atol + tol.rtol * exact.abs()) * torch.sign(exact)
    check = compare(exact, off, tol, bounded=True)
    assert not check.ok and "relative RMS error" in check.message
    assert check.rel_rms_err > RMS_SHARE * max(tol.rtol, tol.atol / float(exact.pow(2).mean().sqrt()))
    # an honest precision change (bf16 rounding) is far inside it
    rounded = exact.to(torch.bfloat16).double()
    honest = compare(exact, rounded, Tolerance(2e-2, 2e-2), bounded=True)
    assert honest.ok and honest.rel_rms_err < 0.005


def test_the_rms_error_is_reported_and_exact_outputs_have_none():
    x = torch.arange(1.0, 101.0, dtype=torch.float64)
    assert compare(x, x.clone()).rel_rms_err == 0.0
    y = x * (1 + 1e-6)
    assert compare(x, y).rel_rms_err == pytest.approx(1e-6, rel=1e-3)


# --- what the pair owns --------------------------------------------------------------------

class Common(Benchmark):
    def make_inputs(self, seed):
        return torch.zeros(4)

    def run(self, inputs):
        return inputs + 1

    def workload(self) -> Workload:
        return Workload(bytes=100.0, flops=10.0, flops_dtype="fp32", units=4, unit_name="rows")


class Honest(Common):
    pass


@pytest.mark.parametrize("hook", ["make_inputs", "reference", "workload", "trace", "simulated_cost"])
def test_a_variant_that_brings_its_own_pair_owned_hook_fails_naming_its_file(hook):
    cheat = type("Cheat", (Common,), {hook: lambda self, *a: None})
    problem = variant_problem(Common(), cheat(), "ch90/optimized_x.py")
    assert problem.startswith(f"ch90/optimized_x.py: defines its own {hook}()")
    assert variant_problem(Common(), Honest(), "ch90/optimized_x.py") is None


def test_a_variant_cannot_file_its_modelled_cost_under_another_key():
    # a new simulated_key would find no stored entry, and a "new" result is not gated
    base = type("Modelled", (Common,), {"simulated_key": "ep16_nvl450"})
    moved = type("Moved", (base,), {"simulated_key": "ep16_nvl900"})
    problem = variant_problem(base(), moved(), "ch90/optimized_x.py")
    assert problem.startswith("ch90/optimized_x.py: defines its own simulated_key; the sides")
    assert variant_problem(base(), type("Same", (base,), {})(), "ch90/optimized_x.py") is None


def test_a_declared_precision_may_count_fewer_bytes_never_more():
    narrow = type("Narrow", (Common,), {"precision": "bf16", "workload": lambda self: Workload(
        bytes=50.0, flops=10.0, flops_dtype="bf16", units=4, unit_name="rows")})
    assert variant_problem(Common(), narrow(), "f") is None
    assert workload_problem(Common().workload(), narrow().workload(), "f") is None
    base = Common().workload()
    more = Workload(bytes=400.0, flops=10.0, flops_dtype="bf16", units=4, unit_name="rows")
    assert "counts more bytes" in workload_problem(base, more, "f")
    slower = Workload(bytes=50.0, flops=10.0, flops_dtype="fp64", units=4, unit_name="rows")
    assert "slower roof" in workload_problem(base, slower, "f")
    other_units = Workload(bytes=50.0, flops=10.0, flops_dtype="fp32", units=8, unit_name="rows")
    assert "units are the pair's" in workload_problem(base, other_units, "f")


def test_a_variant_with_its_own_slo_fails():
    from core.goodput import SLO

    base = type("Served", (Common,), {"slo": SLO(0.5, 0.05)})
    loose = type("Loose", (base,), {"slo": SLO(5.0, 0.5)})
    assert "declares its own slo" in variant_problem(base(), loose(), "f")


# --- declarations are stored, and pinned by the gate ---------------------------------------

def test_declarations_resolve_the_variants_own_then_the_baselines():
    baseline = type("B", (Common,), {"cpu_bound": "the host", "tolerance": Tolerance(1e-3, 1e-3)})()
    variant = type("V", (Common,), {"negative_result": "slower", "precision": "bf16"})()
    found = Declarations.of(baseline, variant)
    assert found == Declarations(negative_result="slower", cpu_bound="the host",
                                 tolerance=(1e-3, 1e-3), precision="bf16")
    assert Declarations.from_dict(found.to_dict()) == found
    assert Declarations().to_dict() == {}


def _stored(speedup: float = 3.0, **declared) -> dict:
    return {"speedup": speedup, "declarations": declared}


@pytest.mark.parametrize("declared, field", [
    ({"negative_result": "slower here"}, "negative_result"),
    ({"goal": "memory"}, "goal"),
    ({"cpu_bound": "the host"}, "cpu_bound"),
    ({"teaching": True}, "teaching"),
    ({"timing_mode": "graph"}, "timing_mode"),
    ({"stateful": True}, "stateful"),
    ({"inplace": True}, "inplace"),
    ({"tolerance": (0.1, 0.1)}, "tolerance"),
])
def test_a_run_declaring_other_rules_than_stored_fails_the_gate(declared, field):
    ex = pair_result(side(1.0), side(1.0), (0.99, 1.01)).examples[0]
    ex.declarations = Declarations(**declared)
    found = rules_changed(ex, _stored())
    assert found.status == "rules changed"
    assert f"{field}: stored" in found.message and "stored as gated at 3.00x" in found.message
    assert "--update-expectations" in found.message
    assert rules_changed(ex, _stored(**Declarations(**declared).to_dict())) is None  # the twin


@pytest.mark.parametrize("field", ["negative_result", "cpu_bound"])
def test_rewording_an_explanation_is_not_a_rule_change_but_dropping_it_is(field):
    """Only whether a negative result or a host-bound step is declared decides the verdict,
    so new words for one (a README-level fix) need no re-store; declaring or dropping one does."""
    ex = pair_result(side(1.0), side(1.0), (0.99, 1.01)).examples[0]
    ex.declarations = Declarations(**{field: "the new words"})
    assert rules_changed(ex, _stored(**{field: "the old words"})) is None
    ex.declarations = Declarations()
    dropped = rules_changed(ex, _stored(**{field: "the old words"}))
    assert dropped.status == "rules changed" and f"{field}: stored 'the old words'" in dropped.message


@pytest.mark.parametrize("stored, now", [
    ({"tolerance": (0.1, 0.1)}, {"tolerance": (0.2, 0.1)}),
    ({"timing_mode": "graph"}, {"timing_mode": "cold"}),
    ({"goal": "memory"}, {"goal": "compile_time"}),
    ({"precision": "bf16 operands"}, {"precision": "fp8 operands"}),
    ({"simulated": "model A"}, {"simulated": "model B"}),
])
def test_any_other_changed_value_is_a_rule_change(stored, now):
    """Past the two explanations, a declaration's value is the rule: a looser tolerance or
    another timing mode, precision or goal is 'rules changed' even when both are declared."""
    ex = pair_result(side(1.0), side(1.0), (0.99, 1.01)).examples[0]
    ex.declarations = Declarations(**now)
    assert rules_changed(ex, _stored(**Declarations(**stored).to_dict())).status == "rules changed"


def test_an_entry_without_declarations_declared_nothing():
    ex = pair_result(side(1.0), side(1.0), (0.99, 1.01)).examples[0]
    assert rules_changed(ex, {"speedup": 3.0}) is None
    ex.declarations = Declarations(negative_result="slower here")
    assert rules_changed(ex, {"speedup": 3.0}).status == "rules changed"
    assert rules_changed(ex, None) is None  # nothing stored: "new"


def test_rules_changed_fails_the_run_like_a_regression(tmp_path):
    from core.record import RunRecord

    result = pair_result(side(1.0), side(1.0), (0.99, 1.01))
    result.examples[0].declarations = Declarations(cpu_bound="the host")
    result.examples[0].expectation = rules_changed(result.examples[0], {"speedup": 3.0})
    record = RunRecord(tmp_path, {}, {}, pairs=[result])
    assert record.exit_code() == 1 and record.exit_code(updating=True) == 0


# --- one typed spec ------------------------------------------------------------------------

def test_the_pair_spec_round_trips_with_typed_floors():
    spec = PairSpec(pair="ch90:x", baseline="ch90/baseline_x.py",
                    examples=[VariantSpec("x", "ch90:x", "ch90/optimized_x.py")],
                    floors={"x": Floor(1.8, 1.1)}, shared_gpu=True)
    again = PairSpec.from_dict(spec.to_dict())
    assert again == spec and isinstance(again.floors["x"], Floor)
    assert again.path_of("x") == "ch90/optimized_x.py" and again.path_of("baseline") == spec.baseline
    assert math.isclose(again.floors["x"].floor, 1.8)


@pytest.mark.parametrize("off, passes", [(0.04, True), (0.075, False)])
def test_the_rms_error_may_use_half_the_declared_band(off, passes):
    """Every element off by `off` relative, inside rtol=0.1 elementwise: the relative RMS
    error (= off) passes up to half the band (0.05) and fails above it."""
    exact = torch.linspace(1.0, 2.0, 1000, dtype=torch.float64)
    check = compare(exact, exact * (1 + off), Tolerance(rtol=0.1, atol=0.0), bounded=True)
    assert check.ok is passes
    assert check.rms_used == pytest.approx(off / (RMS_SHARE * 0.1), rel=1e-6)


# --- found by an adversarial audit (2026-11-28) ----------------------------------------------

@pytest.mark.parametrize("rtol, atol", [(float("nan"), 0.0), (0.0, float("nan")), (float("inf"), 0.0),
                                        (0.0, float("inf")), (-0.1, 0.0), (0.0, -1.0)])
def test_a_tolerance_that_is_not_two_finite_non_negative_numbers_is_refused(rtol, atol):
    """NaN compares False with everything: it passed every bound and every comparison."""
    found = tolerance_problem(Tolerance(rtol, atol), 1.0)
    assert found and "not two finite, non-negative numbers" in found
    assert tolerance_problem(Tolerance(0.01, 0.01), 1.0) is None  # the twin


def test_declarations_are_plain_class_attributes_fixed_at_load():
    from core.benchmark import Benchmark
    from core.declarations import declaration_problem

    class Plain(Benchmark):
        stateful = True
        tolerance = Tolerance(0.01, 0.01)

    class ByProperty(Benchmark):
        @property
        def tolerance(self):
            return Tolerance(float("nan"), float("nan"))

    class ByMethod(Benchmark):
        def stateful(self):
            return True

    assert declaration_problem(Plain(), "p.py") is None
    assert "declares `tolerance` through a property" in declaration_problem(ByProperty(), "p.py")
    assert "declares `stateful` through a function" in declaration_problem(ByMethod(), "p.py")
    later = Plain()
    later.timing_mode = "graph"  # what setup() or run() could do after the load
    assert "sets its declaration `timing_mode` on the instance" in declaration_problem(later, "p.py")


def test_the_guard_watches_every_torch_function_but_torchs_own_rewraps(monkeypatch):
    """A pair that rebinds a torch op (the baseline's, the verifier's, torch.Generator) is
    caught; torch wrapping one of its own (torch._dynamo's manual_seed) is not."""
    import functools

    import torch
    import torch.nn.functional as F

    from core.integrity import Guard

    guard = Guard()
    assert guard.tampered() == []
    real_sin, real_seed, real_gelu = torch.sin, torch.manual_seed, F.gelu
    monkeypatch.setattr(torch, "manual_seed", torch._disable_dynamo(real_seed))  # torch's own
    assert guard.tampered() == []
    monkeypatch.setattr(torch, "sin", functools.wraps(real_sin)(lambda x: real_sin(x)))
    monkeypatch.setattr(torch, "Generator", type("Spy", (torch.Generator,), {}))
    monkeypatch.setattr(F, "gelu", functools.wraps(real_gelu)(lambda x: real_gelu(x)))
    assert set(guard.tampered()) == {"torch.sin", "torch.Generator", "torch.nn.functional.gelu"}
    monkeypatch.setattr(torch, "manual_seed", functools.wraps(real_seed)(lambda s: real_seed(s)))
    assert "torch.manual_seed" in guard.tampered()  # a wrapper of its own is the pair's
