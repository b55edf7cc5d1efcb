"""The child's end of the result protocol (core.process is the parent's end).

The parent writes a fresh token to the child's stdin; the child reads it before any pair
module is imported and writes its result with it, then exits at once (`os._exit`), so a file
that a pair forges, or a thread it leaves running, cannot pass for the harness's result.
"""
from __future__ import annotations

import importlib
import io
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn

from core import REPO_ROOT, atomic


def read_token() -> str:
    """In the child: the parent's token, read from stdin before any pair module is imported."""
    return sys.stdin.readline().strip()


def deliver(path: Path, token: str, payload: dict[str, Any]) -> None:
    """In the child: write the signed result and exit at once (no atexit, no pair threads)."""
    atomic.write_text(path, json.dumps({"token": token, "payload": payload}))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_main(module: str, args: list[str], token: str) -> NoReturn:
    """In a forked process (a pair's child from the fork server, a forked rank): run
    `python -m MODULE ARGS` as a fresh process would, with `token` on its stdin (read_token),
    and exit with its code at once (never the parent's atexit handlers or pipes)."""
    code = 1
    try:
        sys.stdin = io.StringIO(f"{token}\n")
        sys.argv = [str(Path(REPO_ROOT, *module.split("."))) + ".py", *args]
        code = importlib.import_module(module).main(list(args)) or 0  # deliver() exits with 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - the log says why; the parent sees the code
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
