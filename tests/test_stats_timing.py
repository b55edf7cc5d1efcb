"""Statistics (core.stats) and the CPU timing loop (core.timing), with the hooks core.child
uses: harness work before each sample, one captured output per batch, per-round and
per-batch checks that can drop a side."""
from __future__ import annotations

import math
import random
import time

import numpy as np
import pytest

from core.stats import MIN_ROUNDS, median_ci, speedup_interval, summarize
from core.timing import Keep, StopPolicy, Timed, interleaved, measure_cpu, warm_up


# ---------------------------------------------------------------- statistics

def test_summarize_known_data():
    stats = summarize(list(range(100, 0, -1)))  # 1..100, given unsorted
    assert stats.n == 100
    assert stats.median == pytest.approx(50.5)
    assert stats.mean == pytest.approx(50.5)
    assert (stats.min, stats.max) == (1.0, 100.0)
    assert stats.p10 == pytest.approx(10.9)  # numpy's linear interpolation
    assert stats.q1 == pytest.approx(25.75)
    assert stats.q3 == pytest.approx(75.25)
    assert stats.p90 == pytest.approx(90.1)
    assert stats.iqr == pytest.approx(49.5)
    # order-statistic interval: ranks 50 ± 1.96·√100/2 → 41st and 60th values
    assert stats.median_ci == (41.0, 60.0)
    assert stats.rel_ci_halfwidth == pytest.approx(9.5 / 50.5)
    assert stats.samples[0] == 100.0  # raw samples kept in the order given


def test_summarize_small_and_skewed():
    stats = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert stats.median == 3.0 and stats.q1 == 2.0 and stats.q3 == 4.0 and stats.iqr == 2.0
    assert stats.mean == pytest.approx(22.0)  # the mean is dragged by the outlier; the median is not
    assert stats.median_ci == (1.0, 100.0)  # too few samples: the whole range


def test_summarize_to_dict_and_empty():
    d = summarize([1.0, 2.0, 3.0]).to_dict(with_samples=False)
    assert d["median"] == 2.0 and d["iqr"] == pytest.approx(1.0)
    assert isinstance(d["median_ci"], list) and "samples" not in d
    assert summarize([5.0]).to_dict()["samples"] == [5.0]
    with pytest.raises(ValueError):
        summarize([])


def test_median_ci_brackets_median_and_narrows_with_n():
    rng = np.random.default_rng(1)
    widths = []
    for n in (20, 200, 2000):
        samples = np.sort(rng.lognormal(0.0, 0.3, n))
        lo, hi = median_ci(samples)
        assert lo <= np.median(samples) <= hi
        widths.append(hi - lo)
    assert widths[0] > widths[1] > widths[2]
    assert widths[2] < widths[0] / 5  # ~1/√n: 100x the samples, ~10x narrower


def test_median_ci_coverage_is_about_95_percent():
    rng = np.random.default_rng(7)
    true_median = math.log(2)  # exponential(1)
    trials = 400
    hits = sum(lo <= true_median <= hi for lo, hi in
               (median_ci(np.sort(rng.exponential(1.0, 101))) for _ in range(trials)))
    assert 0.90 <= hits / trials <= 0.995


def test_speedup_interval_brackets_true_ratio():
    rng = np.random.default_rng(3)
    baseline = 2.0 * rng.lognormal(0.0, 0.05, 300)  # medians 2.0 and 1.0: true speedup 2.0
    optimized = 1.0 * rng.lognormal(0.0, 0.05, 300)
    lo, hi = speedup_interval(list(baseline), list(optimized))
    assert lo < 2.0 < hi
    assert hi - lo < 0.1
    assert lo <= np.median(baseline) / np.median(optimized) <= hi
    # same distribution: the interval holds 1 and is deterministic for a fixed seed
    same = speedup_interval(list(optimized[:150]), list(optimized[150:]))
    assert same[0] < 1.0 < same[1]
    assert same == speedup_interval(list(optimized[:150]), list(optimized[150:]))


def test_speedup_interval_separates_different_ratios():
    rng = np.random.default_rng(5)
    base = rng.lognormal(0.0, 0.05, 200)
    lo, hi = speedup_interval(list(3.0 * base), list(rng.lognormal(0.0, 0.05, 200)))
    assert lo > 2.5 and hi < 3.5


def test_round_bootstrap_keeps_shared_drift_out_of_the_interval():
    """Rounds alternate the sides, so a slow round slows both: resampling whole rounds sees
    the ratio's own spread, resampling samples independently sees the drift's (ch05 on the
    H100: 1.45-1.62 independently, 1.51-1.55 by rounds)."""
    rng = np.random.default_rng(7)
    rounds = 40
    drift = rng.lognormal(0.0, 0.15, rounds)  # the host's speed, round by round
    base = list(2.0 * drift * rng.lognormal(0.0, 0.01, rounds))
    opt = list(1.0 * drift * rng.lognormal(0.0, 0.01, rounds))
    lo_i, hi_i = speedup_interval(base, opt)
    lo_r, hi_r = speedup_interval(base, opt, rounds=([1] * rounds, [1] * rounds))
    assert lo_r < 2.0 < hi_r
    assert (hi_r - lo_r) < 0.5 * (hi_i - lo_i)


def test_round_bootstrap_does_not_narrow_independent_noise():
    """Without shared drift, rounds of many samples give an interval no narrower than the
    samples' own (several samples of one round are not independent evidence)."""
    rng = np.random.default_rng(8)
    base = list(2.0 * rng.lognormal(0.0, 0.05, 12 * 50))
    opt = list(1.0 * rng.lognormal(0.0, 0.05, 12 * 25))
    lo_i, hi_i = speedup_interval(base, opt)
    lo_r, hi_r = speedup_interval(base, opt, rounds=([50] * 12, [25] * 12))
    assert lo_r < 2.0 < hi_r
    assert (hi_r - lo_r) > 0.7 * (hi_i - lo_i)


@pytest.mark.parametrize("rounds", [([1] * 5, [1] * 5), ([2] * 12, [2] * 11),
                                    ([3] * 12, [2] * 10)])
def test_round_bootstrap_falls_back_when_rounds_are_few_or_do_not_line_up(rounds):
    rng = np.random.default_rng(9)
    base = list(rng.lognormal(0.0, 0.05, sum(rounds[0])))
    opt = list(rng.lognormal(0.0, 0.05, sum(rounds[1])))
    assert speedup_interval(base, opt, rounds=rounds) == speedup_interval(base, opt)


# ---------------------------------------------------------------- timing on CPU

def _cheap() -> int:
    return sum(range(300))  # a few µs


def _medium() -> int:
    return sum(range(5000))  # tens of µs: min_time_s is reached well before the sample cap


def test_measure_cpu_and_warm_up():
    batch = measure_cpu(_cheap, 7)
    assert len(batch.samples_ms) == 7 and all(s > 0 for s in batch.samples_ms)
    assert batch.wall_ms >= sum(batch.samples_ms)
    calls = []
    last_ms, count = warm_up(lambda: calls.append(1), measure_cpu, min_calls=4, min_time_s=0.0)
    assert count == 4 == len(calls) and last_ms >= 0


def test_fixed_samples_are_exact_for_every_side():
    counts = {"fast": 0, "slow": 0}

    def fast():
        counts["fast"] += 1
        return _cheap()

    def slow():
        counts["slow"] += 1
        time.sleep(0.002)

    # a 3 ms round fits all 7 fast samples but one slow one: the run must wait for the slow side
    m = interleaved({"fast": fast, "slow": slow}, StopPolicy(fixed_samples=7, round_time_s=0.003),
                    device="cpu", warmup=2)
    assert m.stop_reason == "fixed sample count"
    assert {k: len(v) for k, v in m.samples_ms.items()} == {"fast": 7, "slow": 7}
    assert m.rounds >= 4
    assert m.warmup_calls == {"fast": 3, "slow": 3}  # 2 warm-up + 1 estimate call
    assert counts == {"fast": 10, "slow": 10}  # never more calls than asked for


def test_adaptive_stop_when_median_is_known(monkeypatch):
    """Samples of a steady 50 µs call with 5% noise (made up, seeded: on a loaded CI host a
    real call's samples once missed the target before the sample cap): the median is known
    well before any cap, and the stop says so."""
    import core.timing
    from core.timing import Batch

    rng = random.Random(0)

    def steady(fn, n, before=None, keep=None):
        for i in range(n):
            if before is not None:
                before(i)
            fn()
        assert keep is None  # plain functions: no output is kept
        samples = [0.05 * (1 + 0.05 * rng.gauss(0, 1)) for _ in range(n)]
        return Batch(samples_ms=samples, wall_ms=sum(samples))
    monkeypatch.setattr(core.timing, "measurer", lambda device: steady)
    policy = StopPolicy(min_samples=10, min_time_s=0.01, max_time_s=5.0, target_rel_ci=0.25,
                        round_time_s=0.002)
    m = interleaved({"baseline": _medium, "optimized": _medium}, policy, device="cpu", warmup=1)
    assert m.stop_reason.startswith("median known to"), m.stop_reason
    for samples in m.samples_ms.values():
        assert len(samples) >= policy.min_samples
        assert sum(samples) / 1e3 >= policy.min_time_s
        assert summarize(samples).rel_ci_halfwidth <= policy.target_rel_ci
    assert m.rounds >= 1 and all(m.batches[k] for k in ("baseline", "optimized"))


def test_adaptive_sample_cap():
    policy = StopPolicy(min_samples=10, min_time_s=0.0, max_samples=300, max_time_s=30.0,
                        target_rel_ci=-1.0, round_time_s=0.001)  # a CI target never met
    m = interleaved({"a": _cheap, "b": _cheap}, policy, device="cpu", warmup=1)
    assert m.stop_reason == "sample cap (300)"
    assert max(len(s) for s in m.samples_ms.values()) >= 300
    assert all(len(s) >= 10 for s in m.samples_ms.values())  # both sides measured


def test_adaptive_time_cap():
    policy = StopPolicy(min_samples=10, min_time_s=0.0, max_samples=10**6, max_time_s=0.05,
                        target_rel_ci=-1.0, round_time_s=0.01)
    started = time.perf_counter()
    m = interleaved({"a": lambda: time.sleep(0.001), "b": lambda: time.sleep(0.001)}, policy,
                    device="cpu", warmup=0)
    assert m.stop_reason == "time cap (0.05 s)"
    assert time.perf_counter() - started < 2.0
    assert all(len(s) > 0 for s in m.samples_ms.values())


def test_sides_are_interleaved_in_rounds():
    order = []
    policy = StopPolicy(fixed_samples=6, round_time_s=1e-9)  # one sample per side per round
    interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, policy,
                device="cpu", warmup=0)
    timed = order[2:]  # after each side's estimate call
    assert timed == ["a", "b"] * 6


def test_harness_hooks_run_outside_the_samples_and_capture_one_output_per_batch():
    log, captured = [], []
    counter = iter(range(10**6))

    def call():
        log.append("call")
        return next(counter)

    def before(i):
        time.sleep(0.002)  # harness work (a flush, a fresh copy): in harness_ms, not the samples
        log.append(f"before {i}")

    side = Timed(call, before, lambda i, out: captured.append((i, out)))
    m = interleaved({"a": side}, StopPolicy(fixed_samples=5, round_time_s=1.0), device="cpu",
                    warmup=1, before_round=lambda i: log.append(f"round {i}"),
                    after_round=lambda i: set(), draw=random.Random(0).randrange)
    assert m.stop_reason == "fixed sample count" and len(m.samples_ms["a"]) == 5
    assert log[:4] == ["before -1", "call", "before -1", "call"]  # warm-up and estimate calls
    timed = log[4:]
    assert timed[0] == "round 1" and timed.count("call") == 5
    # every timed call is prepared with its own index in the batch (its own fresh values)
    rounds = [i for i, entry in enumerate(timed) if entry.startswith("round")] + [len(timed)]
    for start, end in zip(rounds, rounds[1:]):
        befores = [int(e.split()[1]) for e in timed[start:end] if e.startswith("before")]
        assert befores == list(range(len(befores)))
    batches = m.batches["a"]
    assert len(batches) == m.rounds == 2
    for batch in batches:
        assert batch.harness_ms >= 2.0 * len(batch.samples_ms)
        assert max(batch.samples_ms) < 2.0  # the sleep in before() is in no sample
        assert 0 <= batch.captured_at < len(batch.samples_ms)
    # calls 0 and 1 were the warm-up and estimate; the last take of each batch is its kept call
    assert [len(b.samples_ms) for b in batches] == [3, 2]
    kept = [[out for i, out in captured if 2 <= out < 5][-1], [out for i, out in captured if out >= 5][-1]]
    assert kept == [2 + batches[0].captured_at, 5 + batches[1].captured_at]


def test_the_kept_call_is_drawn_after_each_call_returns_and_is_uniform_over_the_batch():
    log = []
    rng = random.Random(3)

    def draw(n):
        log.append(f"draw {n}")
        return rng.randrange(n)

    def call():
        log.append("call")
        return len(log)

    keep = Keep(range(4), draw, lambda i, out: log.append(f"take {i}"))
    measure_cpu(call, 4, keep=keep)
    assert log[0:2] == ["call", "draw 1"] and log[2] == "take 0"  # the first call is always taken
    assert [e for e in log if e.startswith("draw")] == ["draw 1", "draw 2", "draw 3", "draw 4"]
    for i, entry in enumerate(log):  # each draw comes after the call it decides on returned
        if entry.startswith("draw"):
            assert log[i - 1] == "call"
    counts = [0] * 4
    for _ in range(2000):
        counts[measure_cpu(lambda: None, 4, keep=Keep(range(4), rng.randrange,
                                                      lambda i, out: None)).captured_at] += 1
    assert all(400 < c < 600 for c in counts), counts  # 500 each: uniform over the batch


def test_sides_dropped_by_the_round_and_batch_checks_stop_being_timed():
    calls = {"base": 0, "bad_round": 0, "bad_batch": 0}

    def side(name):
        def call():
            calls[name] += 1
        return call

    m = interleaved({n: side(n) for n in calls}, StopPolicy(fixed_samples=6, round_time_s=1e-9),
                    device="cpu", warmup=0,
                    after_round=lambda i: {"bad_round"} if i == 2 else set(),
                    after_batch=lambda name, batch: name == "bad_batch")
    assert m.stop_reason == "fixed sample count" and m.rounds == 6
    assert set(m.samples_ms) == {"base"} and len(m.samples_ms["base"]) == 6
    assert calls == {"base": 7, "bad_round": 3, "bad_batch": 2}  # estimate call + timed rounds


def test_after_batch_runs_before_the_next_side_is_timed():
    order = []

    def check(name: str, batch) -> bool:
        order.append(f"checked {name}")
        return False  # nothing dropped

    sides = {n: (lambda n=n: order.append(n)) for n in ("a", "b")}
    interleaved(sides, StopPolicy(fixed_samples=1), device="cpu", warmup=0, after_batch=check)
    assert order[2:] == ["a", "checked a", "b", "checked b"]  # after each side's estimate call


def test_prepare_gets_each_batch_size_and_max_calls_bounds_it():
    sizes, befores = [], []

    def before(i):
        befores.append(i)

    side = Timed(lambda: None, before, lambda i, out: None, prepare=sizes.append, max_calls=3)
    m = interleaved({"a": side}, StopPolicy(fixed_samples=6, round_time_s=1.0), device="cpu",
                    warmup=0)
    batches = [len(b.samples_ms) for b in m.batches["a"]]
    assert sizes == batches and max(batches) <= 3 and sum(batches) == 6
    timed = befores[1:]  # after the estimate call's before(-1)
    assert befores[0] == -1 and timed == [i for k in batches for i in range(k)]


def test_a_side_of_several_calls_per_sample_reports_time_per_call():
    # a graph replay of K captured calls is one sample: the table shows it divided by K,
    # while the time caps count what the GPU really spent (K times more)
    def four_calls():
        for _ in range(4):
            time.sleep(0.0005)
    policy = StopPolicy(min_samples=3, min_time_s=0.0, max_time_s=0.02, target_rel_ci=-1.0)
    m = interleaved({"a": Timed(four_calls, calls=4)}, policy, device="cpu", warmup=1)
    per_call = m.samples_ms["a"]
    assert 0.4 < sorted(per_call)[len(per_call) // 2] < 1.0, per_call  # ~0.5 ms, not ~2 ms
    assert m.stop_reason.startswith("time cap")
    assert sum(per_call) < 0.02 * 1e3 / 2  # stopped on the GPU's 4x larger real time


def test_a_slow_side_still_gets_its_minimum_samples_before_the_time_cap():
    # 10 samples of a 30 ms side take 0.3 s: past max_time_s (0.1 s), below hard_time_s
    policy = StopPolicy(min_samples=10, min_time_s=0.0, max_time_s=0.1, hard_time_s=5.0,
                        target_rel_ci=-1.0, round_time_s=0.01)
    m = interleaved({"slow": lambda: time.sleep(0.03)}, policy, device="cpu", warmup=0)
    assert len(m.samples_ms["slow"]) >= 10 and m.stop_reason == "time cap (0.1 s)"
    hard = StopPolicy(min_samples=10, min_time_s=0.0, max_time_s=0.01, hard_time_s=0.1,
                      target_rel_ci=-1.0, round_time_s=0.01)
    m = interleaved({"slow": lambda: time.sleep(0.03)}, hard, device="cpu", warmup=0)
    assert len(m.samples_ms["slow"]) < 10 and m.stop_reason == "time cap (0.1 s)"


class _FakeRanks:
    """Agreement as two ranks would see it: `others_failed` is the other rank's answer."""

    def __init__(self, others_failed: bool):
        self.others_failed = others_failed

    def from_rank0(self, value):
        return value

    def any(self, flag):
        return flag or self.others_failed

    def union(self, items):
        return items


def test_a_graph_capture_that_fails_on_one_rank_fails_on_every_rank():
    from core.timing import GraphCaptureError, _agreed

    def broken():
        raise GraphCaptureError("cudaErrorStreamCaptureUnsupported")
    assert _agreed(lambda: ("graph", "out"), _FakeRanks(others_failed=False)) == ("graph", "out")
    with pytest.raises(GraphCaptureError, match="on another rank"):
        _agreed(lambda: ("graph", "out"), _FakeRanks(others_failed=True))
    with pytest.raises(GraphCaptureError, match="StreamCaptureUnsupported"):
        _agreed(broken, _FakeRanks(others_failed=False))
    with pytest.raises(GraphCaptureError, match="StreamCaptureUnsupported"):
        _agreed(broken, None)


def _rounds_with_checks_costing(check_s: float) -> tuple[int, int]:
    """Rounds and samples of a 1 ms side whose checks between rounds take `check_s`."""
    policy = StopPolicy(round_time_s=0.002, max_time_s=0.3, target_rel_ci=0.0)
    m = interleaved({"a": lambda: time.sleep(0.001)}, policy, device="cpu", warmup=1,
                    before_round=lambda _: time.sleep(check_s))
    return m.rounds, len(m.samples_ms["a"])


def test_rounds_grow_longer_when_the_checks_between_them_cost_more_than_the_rounds():
    cheap_rounds, _ = _rounds_with_checks_costing(0.0)
    costly_rounds, samples = _rounds_with_checks_costing(0.03)
    assert cheap_rounds > 60  # 2 samples per round: ~150 rounds in 0.3 s
    # 2 -> 4 -> ... -> 30 samples per round (0.3 s / (MIN_ROUNDS * 1 ms)): far fewer checks,
    # never fewer rounds than the round bootstrap needs, and the side's time is still spent.
    # (Compared with the cheap run, not with a fixed count: a sleep oversleeps on a busy host.)
    assert MIN_ROUNDS <= costly_rounds < cheap_rounds / 2
    assert samples >= 150


def test_a_known_median_stops_longer_rounds_only_once_there_are_enough_of_them():
    """Lengthened rounds are the interval's resampling units: the ±CI stop waits for
    MIN_ROUNDS of them (a steady 1 ms side would otherwise stop after ~5 growing rounds)."""
    policy = StopPolicy(round_time_s=0.002, min_time_s=0.02, max_time_s=5.0, target_rel_ci=0.5)
    m = interleaved({"a": lambda: time.sleep(0.001)}, policy, device="cpu", warmup=1,
                    before_round=lambda _: time.sleep(0.03))
    assert m.stop_reason.startswith("median known")
    assert m.rounds == MIN_ROUNDS


def test_slow_sides_are_probed_with_fewer_calls():
    from core.timing import PROBE_CALLS, probe_calls

    calls = probe_calls({"fast": [0.05] * 20, "mid": [60.0] * 9, "step": [370.0, 380.0, 360.0],
                         "none": []})
    assert calls == {"fast": PROBE_CALLS, "mid": 4, "step": 2, "none": PROBE_CALLS}  # >= 2 always
