"""core.decided: in a gate run, timing stops once every variant's verdict is known (its 99%
interval above its stored floor and narrow enough to be a result); never in a run that
stores results, never for a variant without a floor, never on a regression."""
from __future__ import annotations

import random

import pytest
import torch

from core import timing
from core.child import run_pair
from core.decided import CHECK_ROUNDS, Floor, decided, median_bounds, rounds_decided
from core.discovery import select
from core.runner import RunOptions, gate_entries
from tests.conftest import cpu_only, spec_for, vec_chapter_files, vec_pair_file


def _samples(baseline_ms: float, fast_ms: float, rounds: int, per_round: int, jitter: float):
    rng = random.Random(0)
    draw = lambda ms: [ms * (1 + rng.uniform(-jitter, jitter)) for _ in range(rounds * per_round)]
    samples = {"baseline": draw(baseline_ms), "fast": draw(fast_ms)}
    return samples, {name: [per_round] * rounds for name in samples}


def test_decided_once_every_interval_clears_its_floor_and_is_narrow():
    samples, sizes = _samples(10.0, 5.0, rounds=10, per_round=5, jitter=0.02)  # 2x, steady
    assert decided(10, samples, sizes, {"fast": Floor(1.8, 1.10)}).startswith("decided at round 10")
    assert decided(11, samples, sizes, {"fast": Floor(1.8, 1.10)}) is None  # looks at CHECK_ROUNDS only
    assert decided(10, samples, sizes, {"fast": Floor(2.1, 1.10)}) is None  # 2x is below a 2.1x floor
    noisy, noisy_sizes = _samples(10.0, 5.0, rounds=10, per_round=5, jitter=0.6)
    assert decided(10, noisy, noisy_sizes, {"fast": Floor(1.0, 1.10)}) is None  # too wide to be a result
    # a variant dropped from timing has failed and needs no verdict; with none left, no decision
    assert decided(10, samples, sizes, {"fast": Floor(1.8, 1.10), "gone": Floor(1.8, 1.10)})
    assert decided(10, samples, sizes, {"gone": Floor(1.8, 1.10)}) is None


def test_the_timing_loop_stops_when_decide_says_so(monkeypatch):
    monkeypatch.setattr(timing, "_stop_reason", lambda *a, **k: None)  # the ordinary rule never stops
    x = torch.ones(64)
    asked = []

    def decide(round_index, samples, sizes):
        asked.append(round_index)
        assert all(sum(sizes[name]) == len(samples[name]) for name in samples)
        return "enough" if round_index == 10 else None

    got = timing.interleaved({"baseline": lambda: x + 1, "fast": lambda: x * 2}, timing.StopPolicy(),
                             device="cpu", decide=decide)
    assert (got.rounds, got.stop_reason) == (10, "enough") and asked == list(range(1, 11))


def test_a_fixed_sample_count_is_never_cut_short():
    x = torch.ones(64)
    got = timing.interleaved({"baseline": lambda: x + 1, "fast": lambda: x * 2},
                             timing.StopPolicy(fixed_samples=6), device="cpu",
                             decide=lambda *a: "should not be asked")
    assert got.stop_reason == "fixed sample count"


SLOW_BASELINE = vec_pair_file("""
x, y = inputs
for _ in range(40):  # the same sum, forty times: a baseline that is slow for the test
    out = torch.add(x, y)
return out
""")


def _gate_run(root, make_chapter, monkeypatch, entries):
    files = vec_chapter_files(default=vec_pair_file("return torch.add(*inputs)"))
    files["baseline_vec.py"] = SLOW_BASELINE
    make_chapter("ch95", files)

    def ordinary(samples, policy, *a, **k):  # never settles: stands in for a host-bound pair
        return "cap" if min(len(s) for s in samples.values()) >= 4000 else None
    monkeypatch.setattr(timing, "_stop_reason", ordinary)
    (pair, examples), = select(["ch95"], root)
    spec = spec_for(pair, examples, iterations=None, warmup=1)
    spec.gate_entries = entries
    return run_pair(spec, random.Random(3))


@cpu_only
def test_a_gate_run_stops_at_a_check_round_once_the_floor_is_cleared(in_process_root, make_chapter,
                                                                   monkeypatch):
    # a lenient stored entry (floor 0.3x, widest interval 1.9) so a busy CPU cannot flake it
    result = _gate_run(in_process_root, make_chapter, monkeypatch, {"vec": {"speedup": 3.0,
                                                                            "tolerance": 0.9}})
    assert result.status == "ok", result.examples[0].reason
    assert result.stop_reason.startswith("decided at round") and result.rounds in CHECK_ROUNDS


@cpu_only
def test_a_floor_out_of_reach_or_no_entry_keeps_the_ordinary_rule(in_process_root, make_chapter,
                                                                  monkeypatch):
    far = _gate_run(in_process_root, make_chapter, monkeypatch, {"vec": {"speedup": 1000.0}})
    assert far.stop_reason == "cap"  # a regression runs to the ordinary stop, full interval
    none = _gate_run(in_process_root, make_chapter, monkeypatch, {})
    assert none.stop_reason == "cap"


def test_the_runner_hands_floors_only_to_plain_gate_runs(fake_root, make_chapter, tmp_path):
    make_chapter("ch95", vec_chapter_files(default=vec_pair_file(), fast=vec_pair_file()))
    (pair, examples), = select(["ch95"], fake_root)
    stored = {"vec": {"speedup": 2.0}, "vec_fast": {"speedup": 3.0, "tolerance": 0.2}}
    gate = RunOptions(output_dir=tmp_path)
    assert gate_entries(examples, stored, gate) == {"vec": {"speedup": 2.0},
                                                    "vec_fast": {"speedup": 3.0, "tolerance": 0.2}}
    for options in (RunOptions(output_dir=tmp_path, update_expectations=True),
                    RunOptions(output_dir=tmp_path, mode="smoke"),
                    RunOptions(output_dir=tmp_path, iterations=5)):
        assert gate_entries(examples, stored, options) == {}
    assert gate_entries(examples, {"vec": {"speedup": 2.0}}, gate) == {}  # vec_fast is new
    # another goal travels with its gated ratio (goodput and cold starts stop on it)
    goodput = {**stored, "vec_fast": {"speedup": 0.9, "goodput_ratio": 1.3, "goal": "goodput",
                                      "baseline_goodput_rps": 3.0}}
    assert gate_entries(examples, goodput, gate)["vec_fast"] == {"speedup": 0.9, "goal": "goodput",
                                                                "goodput_ratio": 1.3}


@cpu_only
def test_a_speed_floor_is_never_taken_from_an_entry_stored_for_another_goal(in_process_root,
                                                                          make_chapter):
    from core.child import PairSession

    make_chapter("ch95", vec_chapter_files(default=vec_pair_file()))
    (pair, examples), = select(["ch95"], in_process_root)
    spec = spec_for(pair, examples, iterations=None, warmup=1)
    spec.gate_entries = {"vec": {"speedup": 0.9, "goal": "memory", "memory_ratio": 2.0}}
    session = PairSession(spec, "cpu", random.Random(3))
    assert session.load()
    assert session.gate_floors() == {}
    spec.gate_entries = {"vec": {"speedup": 2.0}}
    assert session.gate_floors()
    session.teardown()


def test_median_bounds_say_where_the_median_of_all_rounds_can_still_fall():
    assert median_bounds([2.0], 3) is None  # one of three: the other two could be anything
    assert median_bounds([2.0, 1.5], 3) == (1.5, 2.0)  # a third value between, below or above
    assert median_bounds([3.0, 1.0, 2.0], 3) == (2.0, 2.0)  # all in: the median itself
    assert median_bounds([4.0, 1.0, 3.0], 5) == (1.0, 4.0)
    assert median_bounds([4.0, 1.0, 3.0, 2.0], 5) == (2.0, 3.0)
    assert median_bounds([1.0, 2.0], 4) is None  # an even count's median is a mean: not bounded here
    # brute force: every way the missing rounds can fall keeps the median within the bounds
    import itertools
    import statistics
    known, total = [1.2, 0.7, 1.9], 5
    lo, hi = median_bounds(known, total)
    for rest in itertools.product([0.0, 0.7, 1.0, 1.5, 9.0], repeat=total - len(known)):
        assert lo <= statistics.median(known + list(rest)) <= hi


def test_rounds_are_decided_only_when_every_variant_clears_its_floor_and_is_narrow():
    floor = Floor(1.2, 1.25)
    assert rounds_decided({"a": (1.3, 1.4)}, {"a": floor})
    assert rounds_decided({"a": (1.1, 1.4)}, {"a": floor}) is None  # may end below the floor
    assert rounds_decided({"a": (1.3, 1.7)}, {"a": floor}) is None  # too wide to be a result
    assert rounds_decided({"a": (1.3, 1.4)}, {"a": floor, "b": floor}) is None  # b not bounded yet
    assert rounds_decided({}, {}) is None


@cpu_only
@pytest.mark.parametrize("declared_on", ["baseline", "variant", "neither"])
def test_a_cpu_bound_pair_is_decided_against_its_wider_floor_wherever_it_is_declared(
        in_process_root, make_chapter, declared_on):
    """The gate's verdict uses the cpu_bound tolerance when either side declares it (the
    baseline's host syncs may be what sets the pair's pace); the early stop must use the same
    floor, not the default one."""
    from core import expectations as expect
    from core.child import PairSession

    cpu_bound = 'cpu_bound = "host syncs set its pace"'
    files = vec_chapter_files(default=vec_pair_file(
        attrs=cpu_bound if declared_on == "variant" else ""))
    files["baseline_vec.py"] = vec_pair_file(attrs=cpu_bound if declared_on == "baseline" else "")
    make_chapter("ch95", files)
    (pair, examples), = select(["ch95"], in_process_root)
    spec = spec_for(pair, examples, iterations=None, warmup=1)
    spec.gate_entries = {e.name: {"speedup": 2.0} for e in examples}
    session = PairSession(spec, "cpu", random.Random(3))
    assert session.load()
    tolerance = (expect.DEFAULT_TOLERANCE if declared_on == "neither"
                 else expect.CPU_BOUND_TOLERANCE)
    floors = session.gate_floors()
    assert floors and all(f.floor == pytest.approx(expect.floor_of(2.0, tolerance))
                          for f in floors.values())
    session.teardown()
