"""Help that reads in full when piped: `python -m cli.aisp bench run --help | less`.

typer renders help with rich. On a terminal that gives panels sized to the window; when stdout
is not a terminal rich sizes them to 80 columns and cuts words and option names that do not
fit with "…". Commands built by `Typer` below switch to click's plain layout there, which wraps
instead of cutting.
"""
from __future__ import annotations

import inspect
import sys
from typing import Any, Callable

from cli._click import click
import typer
from typer.core import TyperCommand, TyperGroup


class _PlainHelpWhenPiped:
    """Click's plain layout when stdout is not a terminal (piped `bench run --help` showed
    `ch07:copy_vector…` and `--update-expect…`); rich panels on a terminal."""

    rich_markup_mode: Any

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if sys.stdout.isatty():
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
        if not args and self.no_args_is_help and not ctx.resilient_parsing and not sys.stdout.isatty():
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
