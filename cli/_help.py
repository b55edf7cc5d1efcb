"""Help that reads in full when piped or on a narrow terminal: `bench run --help | less`.

typer renders help with rich panels sized to the window. When stdout is not a terminal rich
sizes them to 80 columns, and on a terminal narrower than RICH_MIN_COLUMNS the options' column
leaves their help a few characters: both cut words and option names with "…" (an 80-column
terminal cut 8 of `bench run`'s and showed `--update-expecta… <bool>`). Commands built by
`Typer` below switch to click's plain layout there, which wraps instead of cutting.
"""
from __future__ import annotations

import inspect
import shutil
import sys
from typing import Any, Callable

from cli._click import click
import typer
from typer.core import TyperCommand, TyperGroup


RICH_MIN_COLUMNS = 120  # `bench run`'s option names and their help fit side by side from here


def _is_terminal() -> bool:
    return sys.stdout.isatty()


def rich_fits() -> bool:
    """Whether rich's panels show the help whole: a terminal at least RICH_MIN_COLUMNS wide."""
    return _is_terminal() and shutil.get_terminal_size((80, 24)).columns >= RICH_MIN_COLUMNS


class _PlainHelpWhenPiped:
    """Click's plain layout when stdout is not a terminal or is a narrow one (piped `bench run
    --help` showed `ch07:copy_vector…` and `--update-expect…`); rich panels on a wide terminal."""

    rich_markup_mode: Any

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if rich_fits():
            return super().format_help(ctx, formatter)  # type: ignore[misc]
        mode, self.rich_markup_mode = self.rich_markup_mode, None  # typer's switch to click's layout
        try:
            return super().format_help(ctx, formatter)  # type: ignore[misc]
        finally:
            self.rich_markup_mode = mode

    def get_short_help_str(self, limit: int = 45) -> str:
        """A command's line in its group's plain help: its whole first paragraph (wrapped by
        click), where click would cut it at the column's width with "..."."""
        if self.short_help:  # type: ignore[attr-defined]
            return self.short_help  # type: ignore[attr-defined]
        first = inspect.cleandoc(self.help or "").split("\n\n")[0]  # type: ignore[attr-defined]
        return " ".join(first.split())


class _Command(_PlainHelpWhenPiped, TyperCommand):
    pass


class _Group(_PlainHelpWhenPiped, TyperGroup):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # A group called with no arguments shows its help. typer prints that help only as a
        # side effect of rendering it with rich; in plain mode it would print nothing.
        if not args and self.no_args_is_help and not ctx.resilient_parsing and not rich_fits():
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(2)  # the code click's NoArgsIsHelpError exits with (a usage error)
        return super().parse_args(ctx, args)


class Typer(typer.Typer):
    """typer.Typer whose groups and commands print plain help when piped (_PlainHelpWhenPiped)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cls=_Group, **kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Callable:
        kwargs.setdefault("cls", _Command)
        return super().command(*args, **kwargs)
