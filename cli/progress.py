"""Progress of a `bench run`: a rich progress bar on a terminal, plain lines otherwise."""
from __future__ import annotations

import contextlib
import sys
from typing import Callable, Iterator

import typer


@contextlib.contextmanager
def suite_progress(total: int, quiet: bool = False) -> Iterator[Callable[[str], None]]:
    """Yields the callback core.runner.run_suite reports to.

    Terminal: a bar (pairs done / total, current pair, elapsed) with each finished pair's
    line printed above it. Not a terminal (CI logs): the lines alone. `quiet` (--format
    json, whose stdout is the document): nothing.
    """
    if quiet:
        yield lambda line: None
        return
    if not sys.stderr.isatty():
        yield lambda line: typer.echo(line, err=True)
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("starting", total=total)

        def report(line: str) -> None:
            if line.startswith("[") and line.endswith("..."):  # "[3/7] ch07:transpose ..."
                bar.update(task, description=line.split("] ", 1)[1].rstrip(". "))
            elif line.startswith("      ") and "profiling" not in line:  # a pair finished
                bar.advance(task)
                console.print(line.strip())
            elif ": kept from " in line:
                bar.advance(task)
                console.print(line)
            else:
                console.print(line)

        yield report
