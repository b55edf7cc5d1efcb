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
"""
from __future__ import annotations

import random
from typing import Callable

from core.stats import MIN_ROUNDS

STATE_CHECK_SHARE = 0.1  # of the rounds after the first, those that check stateful sides
STATE_CHECK_BUDGET = 0.25  # extra checks' setups, as a share of the baseline's batch time


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

    def batch_took(self, side: str, seconds: float) -> None:
        if side == "baseline":
            self._batch_s = seconds
