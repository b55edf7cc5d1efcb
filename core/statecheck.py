"""Which timing rounds start the `stateful` sides from a fresh setup() (core.child).

A stateful side (a training step: each call moves its weights) cannot be checked against the
baseline on just any call, since the two have drifted apart by then. In a checking round every
stateful side's batch starts from setup(), one of its first calls is kept, and the baseline
is stepped from its own fresh setup through the same calls (core.child). Which rounds check:
- round 1, always;
- one more round, drawn from 2..MIN_ROUNDS before timing starts (every run has a later check,
  at a round the pair cannot know);
- any other round with probability `share`: STATE_CHECK_SHARE, lowered when re-running the
  baseline's setup() costs much more than its batch (a DDP step's setup took seconds on
  2xH200, its batch ~0.1 s, and the checking rounds were most of the pair's time), so that
  the extra checks cost about STATE_CHECK_BUDGET of the baseline's batch time. Only the
  baseline's costs set it: a variant cannot make itself checked less often by making its own
  setup() slow.
Every rank must check the same rounds (a side's setup() may run collectives), so the share is
rank 0's (`agree`).

Only the first calls after a setup() can be checked (an honest side drifts from the baseline
with depth: ch13 training_standard passed its tolerance 4 steps after setup() on an H200 and
not 8), so a side could do its work only there. Its calls' times say so: a variant whose
calls 2..STATE_CHECK_CALLS after a setup() take STATE_WINDOW_SLOWER x its other calls fails
(`window_problem`; per batch the median of those calls, so one slow call is no finding).
Honest sides on an H200 ran them at 0.9-1.0x their steady calls (ch01 performance x3, ch13
optimizer_foreach/_fused and training_standard, 2026-11-28). Call 1 may redo one-time work
(a lazily built state, a first launch) and is not counted; DDP's call 2 rebuilds its buckets
(1.9x a step on CPU ranks), which a median of calls 2-4 absorbs.
"""
from __future__ import annotations

import random
from statistics import median
from typing import Callable, Sequence

from core.stats import MIN_ROUNDS

STATE_CHECK_SHARE = 0.1  # of the rounds after the first, those that check stateful sides
STATE_CHECK_BUDGET = 0.25  # extra checks' setups, as a share of the baseline's batch time
STATE_WINDOW_SLOWER = 1.5  # calls 2..window after setup() against the side's other calls
STATE_WINDOW_SLACK_MS = 0.02  # and at least this much slower per call (timer noise on tiny calls)


class StateChecks:
    def __init__(self, rng: random.Random, stateful: bool, baseline_stateful: bool,
                 agree: Callable[[float], float] = lambda share: share) -> None:
        self.rng, self.stateful, self.baseline_stateful = rng, stateful, baseline_stateful
        self.agree = agree  # rank 0's value on every rank
        self.later = rng.randint(2, MIN_ROUNDS) if stateful else 0
        self.share = STATE_CHECK_SHARE
        self.now = False  # this round starts the stateful sides from a fresh setup()
        self._setup_s: float | None = None  # the baseline's last re-run setup()
        self._batch_s: float | None = None  # the baseline's last batch
        self._window_ms: dict[str, list[float]] = {}  # side -> median of calls 2..window, per setup()
        self._other_ms: dict[str, list[float]] = {}  # side -> its calls outside those

    def start_round(self, index: int) -> bool:
        """Whether round `index` (1-based) checks the stateful sides."""
        if index == 2 and self.baseline_stateful:  # on every rank: agree() is a collective
            affordable = (STATE_CHECK_BUDGET * self._batch_s / self._setup_s
                          if self._setup_s and self._batch_s else STATE_CHECK_SHARE)
            self.share = self.agree(min(STATE_CHECK_SHARE, affordable))
        self.now = self.stateful and (index in (1, self.later) or self.rng.random() < self.share)
        return self.now

    def setup_took(self, side: str, seconds: float) -> float:
        """Note a checking round's setup() of `side`; returns its seconds."""
        if side == "baseline":
            self._setup_s = seconds
        return seconds

    def batch_took(self, side: str, seconds: float, samples_ms: Sequence[float] = (),
                   window: int = 0) -> None:
        """Note a batch: its wall seconds, and for a stateful side its per-call times: in a
        batch from setup(), the median of calls 2..window (a kept output comes from one of
        them; call 1 may redo one-time work, and one slow call among them, such as DDP's
        bucket rebuild in call 2, moves no median of three), when it has at least two of
        them; every call of the other batches."""
        if side == "baseline":
            self._batch_s = seconds
        if not samples_ms:
            return
        if self.now:
            if len(looked := samples_ms[1:window]) >= 2:
                self._window_ms.setdefault(side, []).append(median(looked))
            self._other_ms.setdefault(side, []).extend(samples_ms[window:])
        else:
            self._other_ms.setdefault(side, []).extend(samples_ms)

    def window_problem(self, side: str, window: int) -> str | None:
        """Why `side` looks honest only where it is checked, or None (fewer than 2 such
        batches or 3 other calls: too few to judge)."""
        looked, rest = self._window_ms.get(side, []), self._other_ms.get(side, [])
        if len(looked) < 2 or len(rest) < 3:
            return None
        at, elsewhere = median(looked), median(rest)
        if at <= STATE_WINDOW_SLOWER * elsewhere or at - elsewhere <= STATE_WINDOW_SLACK_MS:
            return None
        return (f"its calls 2-{window} after a setup(), where a stateful side's output is kept "
                f"for the check, took {at:.3g} ms each (median over {len(looked)} "
                f"batches from setup()) against {elsewhere:.3g} ms for its other calls (median "
                f"of {len(rest)}), {at / elsewhere:.1f}x: a stateful side must do the same work "
                f"in every call, not only in those the harness can check")
