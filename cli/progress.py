"""Progress of a `bench run`: a rich progress bar on a terminal, plain lines otherwise."""
from __future__ import annotations

import contextlib
import sys
from typing import Iterator

import typer

from core.events import Event, Listener, Note, PairFinished, PairStarted, RunStarted, describe


@contextlib.contextmanager
def suite_progress(total: int, quiet: bool = False) -> Iterator[Listener]:
    """Yields the listener core.runner.run_suite sends its events (core.events) to.

    Terminal: a bar (pairs done / total, current pair, elapsed) with each finished pair's
    line printed above it. Not a terminal (CI logs): each event's line alone. `quiet`
    (--format json, whose stdout is the document): nothing.
    """
    if quiet:
        yield lambda event: None
        return
    if not sys.stderr.isatty():
        yield lambda event: typer.echo(describe(event), err=True)
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("starting", total=total)

        def say(text: str) -> None:  # pair ids and reasons hold brackets: no rich markup
            console.print(text, markup=False, highlight=False)

        def listen(event: Event) -> None:
            if isinstance(event, PairStarted):
                bar.update(task, description=event.pair)
            elif isinstance(event, PairFinished):
                bar.advance(task)
                say(describe(event).strip())
            elif isinstance(event, (Note, RunStarted)):
                say(describe(event))

        yield listen
