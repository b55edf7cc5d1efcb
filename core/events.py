"""Progress of a suite run, as typed events the runner emits and a front end renders."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Union

from core.record import PairResult


@dataclass(frozen=True)
class RunStarted:
    """The run directory exists (results land there as each pair finishes)."""

    run_dir: Path
    total: int  # pairs selected


@dataclass(frozen=True)
class PairStarted:
    index: int  # 1-based position in the selection
    total: int
    pair: str


@dataclass(frozen=True)
class PairFinished:
    index: int
    total: int
    result: PairResult
    kept: bool = False  # taken from the resumed run, not measured now


@dataclass(frozen=True)
class Note:
    """Anything else worth a line: builds, profiling, an interruption."""

    text: str


Event = Union[RunStarted, PairStarted, PairFinished, Note]
Listener = Callable[[Event], None]


def describe(event: Event) -> str:
    """The plain-text line for an event (CI logs, non-terminal stderr)."""
    if isinstance(event, RunStarted):
        return f"run directory: {event.run_dir} ({event.total} pairs)"
    if isinstance(event, PairStarted):
        return f"[{event.index}/{event.total}] {event.pair} ..."
    if isinstance(event, PairFinished):
        if event.kept:
            return f"[{event.index}/{event.total}] {event.result.pair}: kept from the resumed run"
        statuses = ", ".join(f"{ex.name}: {ex.status}" for ex in event.result.examples)
        return f"      {statuses} ({event.result.duration_s:.1f} s)"
    return event.text
