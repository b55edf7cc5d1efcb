"""The click that typer runs on. typer ≥ 0.2x vendors its own copy (`typer._click`) and no
longer installs click; older typer depends on click itself. Classes that extend typer's
commands or build their contexts must come from the same copy, so import click from here."""
try:
    from typer import _click as click  # type: ignore[attr-defined]
except ImportError:  # an older typer, running on the click package
    import click  # type: ignore[no-redef]

__all__ = ["click"]
