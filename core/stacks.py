"""Where a hung child was: at a timeout, every process of the child writes its Python stacks.

The harness's children register a signal (dump_stacks_on_signal, first thing in core.child's
main); at a pair's timeout core.process signals the child's whole process group
(ask_for_stacks) before it kills it, and the runner names the pair's own frames in the
failure (frames_in): "the pair's code was at ch04/baseline_dataparallel.py:36 in run".
Each process writes a file of its own (several writing one log interleave their lines).
"""
from __future__ import annotations

import faulthandler
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

# A process of the group that did not register the signal dies of it (its default action),
# which the kill that follows would do anyway.
STACKS_SIGNAL = signal.SIGUSR1
STACKS_WAIT_S = 3.0  # at most, for the stacks to be written (the signal handler writes at once)
_FRAME = re.compile(r'File "([^"]+)", line (\d+) in (\S+)')
STACKS_DIR_ENV = "AISP_STACKS_DIR"  # where each process of a child writes its stacks
_stack_files: list[Any] = []  # kept open: faulthandler writes to the file descriptor
RANKS_LINE = "aisp: launching ranks: "  # core.launcher's line, before a multi-GPU pair's ranks


def stacks_dir(log: Path) -> Path:
    """The folder beside a child's log where its processes write their stacks, one file each
    (several processes writing one log at once interleave their lines)."""
    return log.with_suffix(".stacks")


def dump_stacks_on_signal() -> None:
    """In a child of the harness: write all threads' stacks on STACKS_SIGNAL, to a file of
    this process's own in STACKS_DIR_ENV's folder (stderr where it is not set)."""
    folder = os.environ.get(STACKS_DIR_ENV)
    if not folder:
        faulthandler.register(STACKS_SIGNAL, all_threads=True)
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    handle = open(Path(folder) / f"{os.getpid()}.txt", "w")  # noqa: SIM115 - open for life
    _stack_files.append(handle)
    faulthandler.register(STACKS_SIGNAL, file=handle, all_threads=True)


def stacks_of(log: Path) -> str:
    """Every stack the child's processes wrote at its timeout (empty when none did)."""
    folder = stacks_dir(log)
    files = sorted(folder.glob("*.txt")) if folder.is_dir() else []
    return "\n\n".join(f.read_text(errors="replace") for f in files)


def ask_for_stacks(pgid: int, log: Path) -> None:
    """Signal the group for its stacks and wait until their files have stopped growing, for
    at most STACKS_WAIT_S."""
    def size() -> int:
        folder = stacks_dir(log)
        return sum(f.stat().st_size for f in folder.glob("*.txt")) if folder.is_dir() else 0
    before = size()
    try:
        os.killpg(pgid, STACKS_SIGNAL)
    except (ProcessLookupError, PermissionError):
        return
    deadline, last, quiet_since = time.monotonic() + STACKS_WAIT_S, before, None
    while time.monotonic() < deadline:
        time.sleep(0.02)
        now = size()
        if now != last:
            last, quiet_since = now, time.monotonic()
        elif quiet_since is not None and time.monotonic() - quiet_since > 0.2:
            return


def frames_in(log_text: str, folder: Path) -> list[str]:
    """The innermost frame under `folder` of each stack faulthandler wrote: where a pair's
    own code was at the timeout, as 'chNN/file.py:LINE in FUNCTION'."""
    found: list[str] = []
    for block in log_text.split("(most recent call first):")[1:]:
        for path, line, function in _FRAME.findall(block.split("\n\n")[0]):
            try:
                inside = Path(path).resolve().relative_to(folder.resolve())
            except ValueError:
                continue
            frame = f"{folder.name}/{inside}:{line} in {function}"
            if frame not in found:
                found.append(frame)
            break
    return found


def ranks_in_log(log: Path, lines: int = 50) -> int:
    """The rank count core.launcher wrote into a pair's log before its ranks ran (a pair
    killed at its timeout leaves no result saying how many GPUs it ran on); 1 without one."""
    try:
        with open(log, errors="replace") as handle:
            for _, line in zip(range(lines), handle):
                if line.startswith(RANKS_LINE) and line[len(RANKS_LINE):].strip().isdigit():
                    return int(line[len(RANKS_LINE):].strip())
    except OSError:
        pass
    return 1
