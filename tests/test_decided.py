"""core.decided: in a gate run, timing stops once every variant's verdict is known (its 99%
interval above its stored floor and narrow enough to be a result); never in a run that
stores results, never for a variant without a floor, never on a regression."""
from __future__ import annotations

import random

import pytest
import torch

from core import goals
from core import gate as verdict
from core import timing
from core.child import run_pair
from core.decided import CHECK_ROUNDS, Floor, decided, median_bounds, rounds_decided
from core.discovery import select
from core.runner import RunOptions, gate_floors
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
    spec.floors = gate_floors(examples, entries, RunOptions())
    return run_pair(spec, random.Random(3))


@cpu_only
def test_a_gate_run_stops_at_a_check_round_once_the_floor_is_cleared(in_process_root, make_chapter,
                                                                   monkeypatch):
    """The runner's floor reaches the child's timing loop, which stops at the first check
    round its decision says so. (The decision on real intervals is pinned on fixed samples
    above: a toy CPU pair's interval on a busy host is too wide to decide on.)"""
    import core.child

    seen = []

    def decides_at_ten(round_index, samples, sizes, floors):
        seen.append(floors)
        return f"decided at round {round_index}" if round_index == CHECK_ROUNDS[0] else None
    monkeypatch.setattr(core.child, "decided", decides_at_ten)
    result = _gate_run(in_process_root, make_chapter, monkeypatch, {"vec": {"speedup": 3.0,
                                                                            "tolerance": 0.9}})
    assert result.status == "ok", result.examples[0].reason
    assert result.stop_reason == f"decided at round {CHECK_ROUNDS[0]}"
    assert result.rounds == CHECK_ROUNDS[0]
    assert seen and seen[0] == {"vec": Floor(verdict.floor_of(3.0, 0.9), 1.9)}


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
    assert gate_floors(examples, stored, gate) == {
        "vec": Floor(verdict.floor_of(2.0, 0.10), 1.10), "vec_fast": Floor(verdict.floor_of(3.0, 0.2), 1.2)}
    for options in (RunOptions(output_dir=tmp_path, update_expectations=True),
                    RunOptions(output_dir=tmp_path, mode="smoke"),
                    RunOptions(output_dir=tmp_path, iterations=5)):
        assert gate_floors(examples, stored, options) == {}
    assert gate_floors(examples, {"vec": {"speedup": 2.0}}, gate) == {}  # vec_fast is new
    # another goal's floor is its gated ratio's, with the tolerance its rounds are judged by
    goodput = {**stored, "vec_fast": {"speedup": 0.9, "goodput_ratio": 1.3, "goal": "goodput",
                                      "baseline_goodput_rps": 3.0}}
    assert gate_floors(examples, goodput, gate)["vec_fast"] == Floor(
        verdict.floor_of(1.3, verdict.CPU_BOUND_TOLERANCE), 1 + verdict.CPU_BOUND_TOLERANCE)
    # a stored negative result is never decided early, so neither is its pair
    negative = {**stored, "vec_fast": {"speedup": 0.8, "declarations": {"negative_result": "why"}}}
    assert gate_floors(examples, negative, gate) == {}


def test_a_speed_floor_is_never_taken_from_an_entry_stored_for_another_goal(fake_root, make_chapter,
                                                                          tmp_path):
    make_chapter("ch95", vec_chapter_files(default=vec_pair_file()))
    (pair, examples), = select(["ch95"], fake_root)
    memory = {"vec": {"speedup": 0.9, "goal": "memory", "memory_ratio": 2.0}}
    floors = gate_floors(examples, memory, RunOptions(output_dir=tmp_path))
    assert goals.timing_floors(floors, {"vec": "memory"}) == {}
    assert goals.timing_floors(floors, {"vec": "speed"}) == {}  # stored for memory: no speed floor
    speed = gate_floors(examples, {"vec": {"speedup": 2.0}}, RunOptions(output_dir=tmp_path))
    assert goals.timing_floors(speed, {"vec": "speed"}) == speed
    assert goals.timing_floors(speed, {"vec": "memory"}) == {}  # the run's goal is not speed


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


@pytest.mark.parametrize("stored_cpu_bound", [True, False])
def test_a_cpu_bound_pair_is_decided_against_its_wider_floor(fake_root, make_chapter, tmp_path,
                                                             stored_cpu_bound):
    """The early stop uses the floor the verdict uses: the cpu_bound tolerance when the entry
    is stored as cpu_bound (a run declaring otherwise fails the gate as 'rules changed')."""
    make_chapter("ch95", vec_chapter_files(default=vec_pair_file()))
    (pair, examples), = select(["ch95"], fake_root)
    entry = {"speedup": 2.0, **({"cpu_bound": "host syncs set its pace"} if stored_cpu_bound else {})}
    floors = gate_floors(examples, {"vec": entry}, RunOptions(output_dir=tmp_path))
    tolerance = verdict.CPU_BOUND_TOLERANCE if stored_cpu_bound else verdict.DEFAULT_TOLERANCE
    assert floors["vec"].floor == pytest.approx(verdict.floor_of(2.0, tolerance))
    assert goals.goal_of("speed").tolerance(None, "host syncs" if stored_cpu_bound else "") == tolerance
