"""What an optimized variant buys, one room per goal: how it is measured, floored, gated,
stored, shown and explained.

A variant declares `goal = "<name>"` (speed by default). Everything that depends on the goal
lives in one module here behind `Goal`; nothing outside this package branches on a goal's
name. A new goal is one module and one line in GOALS below.

    speed           the speedup (core.goals.speed)
    memory          the peak device memory saved (core.memory below it)
    compile_time    the cold start saved, in fresh processes (core.compile_time below it)
    goodput         requests/s meeting an SLO on a replayed trace (core.goodput below it)
    simulated_cost  the modelled seconds of the work a `simulated` pair plans

The measurement helpers below the goals (core.memory, core.compile_time, core.goodput) know
nothing of verdicts, and core.gate knows nothing of goals: a goal joins the two.
"""
from __future__ import annotations

from typing import Any

from core.benchmark import Benchmark
from core.decided import Floor
from core.goals.base import Goal, Outside, stored_ratio
from core.goals.compile_time import CompileTime
from core.goals.goodput import Goodput
from core.goals.memory import Memory
from core.goals.simulated_cost import SimulatedCost
from core.goals.speed import Speed

__all__ = ["GOALS", "NAMES", "DEFAULT", "Goal", "Outside", "goal_of", "check_contract", "by_goal",
           "timing_floors", "time_is_context", "stored_ratio", "ratio_of"]
GOALS: dict[str, Goal] = {g.name: g for g in (Speed(), Memory(), CompileTime(), Goodput(),
                                               SimulatedCost())}
NAMES = tuple(GOALS)
DEFAULT = Speed.name


def goal_of(name: str) -> Goal:
    """The goal a variant declared (`Benchmark.goal`); KeyError names the known ones."""
    try:
        return GOALS[name]
    except KeyError:
        raise KeyError(f"unknown goal {name!r}; known: {', '.join(NAMES)}") from None


def ratio_of(ex: Any) -> float | None:
    """The ratio a variant's goal gates, measured in this run (its speedup for speed)."""
    return goal_of(ex.goal).ratio(ex)


def check_contract(bench: Benchmark, origin: str) -> None:
    """The declared goal is known and the pair has what it needs (TypeError names `origin`)."""
    name = getattr(bench, "goal", DEFAULT)
    if name not in GOALS:
        raise TypeError(f"{origin}: goal must be one of {', '.join(map(repr, NAMES))}, got {name!r}")
    GOALS[name].check_contract(bench, origin)


def by_goal(goals_of: dict[str, str]) -> dict[Goal, list[str]]:
    """Variant names grouped by their goal (`goals_of`: name -> goal name), goals in order."""
    grouped: dict[Goal, list[str]] = {}
    for goal in GOALS.values():
        names = [n for n, g in goals_of.items() if g == goal.name]
        if names:
            grouped[goal] = names
    return grouped


def timing_floors(floors: dict[str, Floor], goals_of: dict[str, str]) -> dict[str, Floor]:
    """The floors the timed rounds may stop against: every variant is gated on its time and
    has one; {} otherwise (the ordinary stopping rule decides alone)."""
    if not goals_of or any(not goal_of(g).gates_time or n not in floors for n, g in goals_of.items()):
        return {}
    return {n: floors[n] for n in goals_of}


def time_is_context(goals_of: dict[str, str]) -> bool:
    """No variant is gated on its time: the time is reported beside other goals."""
    return bool(goals_of) and not any(goal_of(g).gates_time for g in goals_of.values())
