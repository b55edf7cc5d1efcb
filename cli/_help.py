"""Help that reads in full on any terminal, and when piped: `bench run --help | less`.

typer draws help as rich panels sized to the window (80 columns when piped): they cut words
and option names with "…" and tag every flag `<bool>` (an 80-column terminal cut 8 of
`bench run`'s items and showed `--update-expecta… <bool>`). `rich_markup_mode=None`, typer's
own switch, gives click's plain layout instead, which wraps. In a group's list of commands
click cuts each command's first paragraph at the column's width with "..."; `short_help`
(typer's option) set to that whole paragraph keeps it whole. Errors print as plain text too.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

import typer


def first_paragraph(text: str | None) -> str:
    return " ".join(inspect.cleandoc(text or "").split("\n\n")[0].split())


class Typer(typer.Typer):
    """typer.Typer with click's plain help, and each command's and group's whole first
    paragraph in its group's list."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("short_help", first_paragraph(kwargs.get("help")) or None)
        super().__init__(rich_markup_mode=None, **kwargs)

    def command(self, name: str | None = None, **kwargs: Any) -> Callable:
        register = super().command

        def decorate(function: Callable) -> Callable:
            kwargs.setdefault("short_help", first_paragraph(function.__doc__) or None)
            return register(name, **kwargs)(function)
        return decorate
