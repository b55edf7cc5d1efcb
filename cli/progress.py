"""Progress of a `bench run`: a rich progress bar on a terminal, plain lines otherwise."""
from __future__ import annotations

import contextlib
import sys
import time
from typing import Callable, Iterator

import typer

from core.events import Event, Listener, Note, PairFinished, PairStarted, RunStarted, describe


class Pace:
    """How long the rest of a run may take, at the pace of the pairs measured so far (pairs
    kept from a resumed run took no time and do not count)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock, self.started, self.measured = clock, clock(), 0

    def finished(self, event: PairFinished) -> None:
        if not event.kept:
            self.measured += 1

    def left(self, event: PairStarted) -> str:
        """' (about 5 min 10 s left)' before pair `event.index`, once a pair was measured."""
        if not self.measured:
            return ""
        from core.report import human_duration

        each = (self.clock() - self.started) / self.measured
        return f" (about {human_duration(each * (event.total - event.index + 1))} left)"


@contextlib.contextmanager
def suite_progress(total: int, quiet: bool = False,
                   clock: Callable[[], float] = time.monotonic) -> Iterator[Listener]:
    """Yields the listener core.runner.run_suite sends its events (core.events) to.

    Terminal: a bar (pairs done / total, current pair, elapsed, time left at the pace so far)
    with each finished pair's line printed above it. Not a terminal (CI logs): each event's
    line alone, a pair's start line with the time left. `quiet` (--format json, whose stdout is
    the document): nothing.
    """
    if quiet:
        yield lambda event: None
        return
    pace = Pace(clock)
    if not sys.stderr.isatty():
        def plain(event: Event) -> None:
            line = describe(event)
            if isinstance(event, PairStarted):
                line += pace.left(event)
            elif isinstance(event, PairFinished):
                pace.finished(event)
            typer.echo(line, err=True)
        yield plain
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn)

    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("{task.fields[left]}"), console=console,
                  transient=True) as bar:
        task = bar.add_task("starting", total=total, left="")

        def say(text: str) -> None:  # pair ids and reasons hold brackets: no rich markup
            console.print(text, markup=False, highlight=False)

        def listen(event: Event) -> None:
            if isinstance(event, PairStarted):
                bar.update(task, description=event.pair, left=pace.left(event).strip(" ()"))
            elif isinstance(event, PairFinished):
                pace.finished(event)
                bar.advance(task)
                say(describe(event).strip())
            elif isinstance(event, (Note, RunStarted)):
                say(describe(event))

        yield listen
