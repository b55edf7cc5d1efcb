"""core.statecheck: which timing rounds start the stateful sides from a fresh setup()."""
from __future__ import annotations

import random

import pytest

from core.statecheck import STATE_CHECK_BUDGET, STATE_CHECK_SHARE, StateChecks
from core.stats import MIN_ROUNDS


def rounds_checked(checks: StateChecks, rounds: int, setup_s: float, batch_s: float,
                   variant_setup_s: float = 0.0) -> list[int]:
    checked = []
    for index in range(1, rounds + 1):
        if checks.start_round(index):
            checked.append(index)
            checks.setup_took("baseline", setup_s)
            checks.setup_took("variant", variant_setup_s)
        checks.batch_took("baseline", batch_s)
    return checked


def test_round_one_and_one_later_round_always_check():
    for seed in range(20):
        checks = StateChecks(random.Random(seed), stateful=True, baseline_stateful=True)
        checked = rounds_checked(checks, MIN_ROUNDS, setup_s=100.0, batch_s=0.01)
        assert checked[0] == 1 and checked[1] == checks.later and 2 <= checks.later <= MIN_ROUNDS
    none = StateChecks(random.Random(0), stateful=False, baseline_stateful=False)
    assert rounds_checked(none, 50, setup_s=0.1, batch_s=0.1) == []


def test_the_other_rounds_check_less_when_the_baselines_setup_is_dear():
    """A cheap setup keeps the 10% share; a DDP-like one (3 s of setup for a 0.09 s batch)
    checks about as often as a quarter of the baseline's batch time pays for."""
    cheap = StateChecks(random.Random(1), stateful=True, baseline_stateful=True)
    rounds_checked(cheap, 2, setup_s=0.01, batch_s=0.1)
    assert cheap.share == STATE_CHECK_SHARE
    dear = StateChecks(random.Random(1), stateful=True, baseline_stateful=True)
    checked = rounds_checked(dear, 400, setup_s=3.0, batch_s=0.09)
    assert dear.share == STATE_CHECK_BUDGET * 0.09 / 3.0
    assert len(checked) < 2 + 10  # ~0.0075 x 398 other rounds: 3 expected, not 40


def test_a_variant_cannot_lower_its_own_checks_by_a_slow_setup():
    checks = StateChecks(random.Random(2), stateful=True, baseline_stateful=True)
    rounds_checked(checks, 2, setup_s=0.01, batch_s=0.1, variant_setup_s=1000.0)
    assert checks.share == STATE_CHECK_SHARE
    own = StateChecks(random.Random(2), stateful=True, baseline_stateful=False)
    rounds_checked(own, 2, setup_s=0.0, batch_s=0.1, variant_setup_s=1000.0)
    assert own.share == STATE_CHECK_SHARE  # a stateless baseline: only the fixed share


def test_every_rank_takes_rank_zeros_share():
    agreed = []
    checks = StateChecks(random.Random(3), stateful=True, baseline_stateful=True,
                         agree=lambda share: agreed.append(share) or 0.5)
    rounds_checked(checks, 3, setup_s=3.0, batch_s=0.09)
    assert len(agreed) == 1 and checks.share == 0.5  # asked once, at round 2, on every rank


STATEFUL_COMMON = '''
import torch
from core.benchmark import Benchmark, Workload


class Step(Benchmark):
    """A stand-in for a training step: each call's answer depends on its inputs only, so the
    baseline and an honest side agree at any depth."""
    supports_cpu = True
    stateful = True

    def setup(self, ctx):
        self.since_setup = 0

    def make_inputs(self, seed):
        gen = self.generator(seed)
        return self.randn(1 << 14, gen=gen), self.randn(1 << 14, gen=gen)

    def work(self, x, y):
        for _ in range(8):
            x = torch.sin(x) * y + x
        return x

    def run(self, inputs):
        self.since_setup += 1
        return self.work(*inputs)

    def workload(self):
        return Workload(bytes=3 * (1 << 14) * 4)
'''
HONEST_AFTER_SETUP_ONLY = '''
from ._step_common import Step


class HonestWhereLooked(Step):
    """CHEAT: the full step for the first four calls after each setup(), where a checking
    round keeps its output; after that, the last answer again (no work)."""

    def run(self, inputs):
        self.since_setup += 1
        if self.since_setup <= 4 or not hasattr(self, "last"):
            self.last = self.work(*inputs)
        return self.last.clone()


get_benchmark = HonestWhereLooked
'''


HONEST_TWIN = """
from ._step_common import Step


class SameStep(Step):
    \"\"\"Honest: every call does the step, however long after setup().\"\"\"


get_benchmark = SameStep
"""


@pytest.mark.parametrize("variant, honest", [(HONEST_AFTER_SETUP_ONLY, False), (HONEST_TWIN, True)])
def test_a_stateful_side_honest_only_after_setup_is_caught(in_process_root, make_chapter,
                                                           variant, honest):
    """Only the first calls after a setup() can be checked; this cheat does its work only
    there and got through at 34.9x before its calls' times were compared."""
    import random as rnd

    from core.child import run_pair
    from core.discovery import select
    from tests.conftest import spec_for

    make_chapter("ch95", {"_step_common.py": STATEFUL_COMMON,
                          "baseline_step.py": "from ._step_common import Step\nget_benchmark = Step\n",
                          "optimized_step.py": variant})
    (pair, examples), = select(["ch95"], in_process_root)
    result = run_pair(spec_for(pair, examples, iterations=None, warmup=1), rnd.Random(3))
    ex = result.examples[0]
    assert result.rounds > 3  # batches that did not start from setup() were timed
    if honest:
        assert ex.status == "ok", ex.reason
    else:
        assert ex.status == "failed", f"{ex.status}: {ex.speedup:.1f}x, {ex.reason}"
        assert "not only in those the harness can check" in ex.reason, ex.reason


def window_checks(window_ms: float, other_ms: float, first_ms: float | None = None,
                  window: int = 4, looked: list[float] | None = None) -> StateChecks:
    """Seven rounds, rounds 1 and 4 from setup(); each batch 7 calls: call 1, calls 2..window,
    then the other calls."""
    checks = StateChecks(random.Random(0), stateful=True, baseline_stateful=True)
    for index in range(1, 8):
        checks.now = index in (1, 4)
        if checks.now:
            calls = [window_ms if first_ms is None else first_ms, *(looked or [window_ms] * (window - 1))]
        else:
            calls = [other_ms] * window
        checks.batch_took("variant", 0.1, [*calls, *[other_ms] * (7 - window)], window=window)
    return checks


def test_window_problem_compares_calls_two_to_four_after_setup_with_the_rest():
    assert "3.0x" in window_checks(window_ms=3.0, other_ms=1.0).window_problem("variant", 4)
    assert window_checks(window_ms=1.4, other_ms=1.0).window_problem("variant", 4) is None
    assert window_checks(window_ms=0.9, other_ms=1.0).window_problem("variant", 4) is None
    # call 1 after setup() may redo one-time work (a lazily built state): not counted
    for window in (3, 4):
        slow_first = window_checks(window_ms=1.0, other_ms=1.0, first_ms=50.0, window=window)
        assert slow_first.window_problem("variant", window) is None
    # one slow call among 2-4 (DDP rebuilds its buckets in call 2) moves no median of three
    assert window_checks(1.0, 1.0, looked=[9.0, 1.0, 1.0]).window_problem("variant", 4) is None
    assert window_checks(1.0, 1.0, first_ms=50.0, looked=[9.0, 1.0, 1.0]).window_problem("variant", 4) is None
    # ...but a side honest in calls 2-3 only (the kept call is 4 a third of the time) is slower
    assert window_checks(3.0, 1.0, looked=[3.0, 3.0, 1.0]).window_problem("variant", 4) is not None
    # a tiny call's timer noise: 2x of 5 us is not a finding
    assert window_checks(window_ms=0.010, other_ms=0.005).window_problem("variant", 4) is None
    never = StateChecks(random.Random(0), stateful=True, baseline_stateful=True)
    never.batch_took("variant", 0.1, [1.0] * 8, window=4)  # no batch started from setup()
    assert never.window_problem("variant", 4) is None
    # too little to judge: batches of two calls (one of them in the window), or one such batch
    short = StateChecks(random.Random(0), stateful=True, baseline_stateful=True)
    for now in (True, True, False, False):
        short.now = now
        short.batch_took("variant", 0.1, [5.0, 9.0] if now else [4.9, 4.9], window=4)
    assert short.window_problem("variant", 4) is None
