"""`aisp --version`: the package's version, torch's, and the git commit of the checkout."""
from __future__ import annotations

import re
from importlib import metadata

from core import REPO_ROOT


def _project_field(key: str) -> str | None:
    """`key = "..."` of pyproject.toml's [project] table (a regex, not tomllib: Python 3.10 is
    supported and has none); None when the file or the field is missing."""
    try:
        text = (REPO_ROOT / "pyproject.toml").read_text()
    except OSError:
        return None
    table = re.search(r"^\[project\][ \t]*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    field = table and re.search(rf'^{key}\s*=\s*"([^"]+)"', table.group(1), re.M)
    return field.group(1) if field else None


def aisp_version() -> str:
    """The installed package's version; pyproject.toml's when the checkout is not installed
    (run from a copied tree with PYTHONPATH set)."""
    try:
        return metadata.version(_project_field("name") or "aisp")
    except metadata.PackageNotFoundError:
        return _project_field("version") or "unknown"


def version_lines() -> list[str]:
    """`aisp X`, then torch's version and the git commit where they can be found. torch's
    version comes from its package metadata: importing torch would take seconds."""
    from core.hardware import git_commit

    lines = [f"aisp {aisp_version()}"]
    try:
        lines.append(f"torch {metadata.version('torch')}")
    except metadata.PackageNotFoundError:
        lines.append("torch not installed")
    commit = git_commit()
    if commit:
        lines.append(f"git commit {commit}")
    return lines
