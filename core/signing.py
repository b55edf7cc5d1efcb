"""The child's end of the result protocol (core.process is the parent's end).

The parent writes a fresh token to the child's stdin; the child reads it before any pair
module is imported and writes its result with it, then exits at once (`os._exit`), so a file
that a pair forges, or a thread it leaves running, cannot pass for the harness's result.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from core import atomic


def read_token() -> str:
    """In the child: the parent's token, read from stdin before any pair module is imported."""
    return sys.stdin.readline().strip()


def deliver(path: Path, token: str, payload: dict[str, Any]) -> None:
    """In the child: write the signed result and exit at once (no atexit, no pair threads)."""
    atomic.write_text(path, json.dumps({"token": token, "payload": payload}))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
