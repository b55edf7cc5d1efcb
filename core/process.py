"""Child processes: one per pair, in its own process group, with a result only the harness signs.

The parent makes a random token per child (never on the command line, in the environment or
in a file) and hands it out on the child's stdin only when the child's harness asks, after
its checks (core.signing.TokenDesk); the harness writes it into the result file and exits at
once (`os._exit`): a file that a pair's own code wrote to the result path carries no token
and is rejected. On a timeout, and
after every child, the whole process group is killed, so a helper process a pair started
does not outlive it.

This defends against a pair that forges results by path, and (the token being in no memory
of the child while its code runs) against one that reads the token from memory; code inside
the child can still ask the desk itself (core.signing says where the line is), so the other
rules (fresh inputs, timed-output checks, the Guard) do not rely on the token.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from core import REPO_ROOT
from core.stacks import STACKS_DIR_ENV, ask_for_stacks, stacks_dir


def child_env(root: Path = REPO_ROOT) -> dict[str, str]:
    """The environment of a child: the chapters' root first on PYTHONPATH, unbuffered output."""
    path = os.pathsep.join(filter(None, [str(root), str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}


# What may be forked from the run's fork server (module -> the first arguments allowed; None:
# any): a pair's child, the requirements check, the device probe and the comparison of cold-start
# answers. Cold starts, profiling and load tests start from nothing: that is their point.
FORKED: dict[str, set[tuple[str, ...]] | None] = {
    "core.child": None, "core.precheck": None,
    "core.toolchild": {("--probe",), ("--compare",)},
}


@dataclass
class ChildOutcome:
    code: int | None  # exit code; None when it was killed at the timeout
    tail: str  # the end of its log
    payload: dict[str, Any] | None  # the result the harness wrote, when it carries the token
    problem: str | None = None  # why a result file that exists was not accepted


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_child(args: list[str], timeout_s: float, log: Path, root: Path = REPO_ROOT,
              result: Path | None = None, env: dict[str, str] | None = None,
              module: str = "core.child") -> ChildOutcome:
    """Run `python -m MODULE ARGS` (core.child, or core.precheck) in a new process group;
    read `result` if given.

    `root` (the folder holding the chapter packages) goes first on the child's PYTHONPATH,
    so pair files import as `chNN.<file>` from wherever the chapters live (tests use a tmp dir).
    `env`: variables to set on top of the usual child environment. A pair's own child
    (core.child), the requirements check and the device probe (FORKED) are forked from this
    thread's fork server when one is up (`fork_server()`) and was started with the same extra
    environment; everything else starts from scratch.
    """
    token = secrets.token_hex(16)
    if result is not None:
        result.unlink(missing_ok=True)
    server = _thread.server
    forked = (server is not None and (env or {}) == server.env
              and module in FORKED and (FORKED[module] is None or tuple(args[:1]) in FORKED[module]))
    code = (_run_forked(server, args, timeout_s, log, root, token, module) if forked
            else _NOT_FORKED)
    if code is _NOT_FORKED:
        code = _run_fresh(args, timeout_s, log, root, token, env, module)
    if code is not None:  # no timeout: no stacks were asked for (the folder holds empty files)
        shutil.rmtree(stacks_dir(log), ignore_errors=True)
    tail = log.read_text(errors="replace")[-3000:]
    if result is None or not result.exists():
        return ChildOutcome(code, tail, None)
    try:
        signed = json.loads(result.read_text())
    except json.JSONDecodeError:
        return ChildOutcome(code, tail, None, f"{result.name} is not valid JSON")
    if not isinstance(signed, dict) or not secrets.compare_digest(str(signed.get("token")), token):
        return ChildOutcome(code, tail, None,
                            f"{result.name} was not written by the harness (it lacks this run's "
                            f"token): the pair's own code wrote or replaced its result")
    return ChildOutcome(code, tail, signed.get("payload"))


def start_fresh(args: list[str], log: Path, root: Path = REPO_ROOT,
                env: dict[str, str] | None = None, module: str = "core.child") -> subprocess.Popen:
    """Start `python -m MODULE ARGS` in a new process group, its output to `log`, and hand it
    a fresh token on stdin; the caller waits for it and kills its group (kill_group)."""
    token = secrets.token_hex(16)
    return _popen(args, log, root, token, env, module)


def _popen(args: list[str], log: Path, root: Path, token: str, env: dict[str, str] | None,
           module: str) -> subprocess.Popen:
    """The child, its stdin the token desk's socket (core.signing): it asks for the token when
    it signs, and the desk's thread ends when the child (and all it started) has gone."""
    from core.signing import TokenDesk

    desk = TokenDesk(token)
    try:
        with open(log, "w") as handle:
            proc = subprocess.Popen([sys.executable, "-m", module, *args], cwd=REPO_ROOT,
                                    env={**child_env(root), **(env or {}),
                                         STACKS_DIR_ENV: str(stacks_dir(log))}, stdin=desk.child_end,
                                    stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        desk.close_child_end()
    desk.start()
    return proc


_running: set[int] = set()  # process groups of fresh children being waited for (kill_running)
_running_lock = threading.Lock()
_refusing = False  # after kill_running, until accept_children: new children are killed at once


def _register(pgid: int) -> None:
    """A child some thread now waits for: kill_running() can reach it."""
    with _running_lock:
        _running.add(pgid)
        if _refusing:  # started by a thread that was past its last check when Ctrl-C came
            kill_group(pgid)


def _unregister(pgid: int) -> None:
    with _running_lock:
        _running.discard(pgid)


def _run_fresh(args: list[str], timeout_s: float, log: Path, root: Path, token: str,
               env: dict[str, str] | None, module: str) -> int | None:
    """A new Python process: the exit code, or None when killed at the timeout."""
    proc = _popen(args, log, root, token, env, module)
    try:  # from here a Ctrl-C, too, ends in the finally below
        _register(proc.pid)
        code: int | None = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        code = None
        ask_for_stacks(proc.pid, log)
    finally:  # timeout, Ctrl-C or a normal exit: nothing it started keeps running
        kill_group(proc.pid)
        proc.wait()
        _unregister(proc.pid)
    return code


def kill_running() -> None:
    """Kill every child (fresh or forked) that some thread is waiting for, and every one started after
    this until accept_children() (core.side_by_side on Ctrl-C: the interrupt reaches only the
    main thread, and a thread may be about to start its pair's child); their waits then
    return at once."""
    global _refusing
    with _running_lock:
        _refusing = True
        for pgid in list(_running):
            kill_group(pgid)


def accept_children() -> None:
    """Children may run again (after kill_running, once its threads are done)."""
    global _refusing
    with _running_lock:
        _refusing = False


# --- the run's fork servers (core.forkserver) --------------------------------------------------
class _ThreadServer(threading.local):
    server: Any = None  # this thread's core.forkserver.ForkServer while fork_server() is active


_thread = _ThreadServer()
_NOT_FORKED: Any = object()


def open_fork_server(env: dict[str, str] | None = None, preload: bool = True) -> Any:
    """A started core.forkserver.ForkServer with `env` set in it and its children, or None
    when AISP_FORK_SERVER=0 or it cannot start (children then start from scratch). `preload`:
    it also imports the compiler front end (worth it only when pairs compile). The caller
    hands it to a thread (use_fork_server) and closes it."""
    if os.environ.get("AISP_FORK_SERVER", "1") == "0" or not hasattr(os, "fork"):
        return None
    from core.forkserver import ForkServer, ForkServerError

    try:
        return ForkServer(preload=preload, env=env)
    except (ForkServerError, OSError):
        return None


def use_fork_server(server: Any) -> None:
    """The calling thread's pairs fork from `server` (None: from scratch)."""
    _thread.server = server


@contextmanager
def fork_server(env: dict[str, str] | None = None, preload: bool = True) -> Iterator[None]:
    """While active, the pairs' children this thread runs are forked from one process that
    imported torch once (core.forkserver). Each thread has its own: a smoke run side by side
    gives each job thread one, with `env` (its share of the cores) set in the server and its
    children. `preload`: the server imports the compiler front end too (~2 s of a CPU)."""
    use_fork_server(open_fork_server(env, preload))
    try:
        yield
    finally:
        if _thread.server is not None:
            _thread.server.close()
        _thread.server = None


def _run_forked(server: Any, args: list[str], timeout_s: float, log: Path, root: Path,
                token: str, module: str) -> Any:
    """A child forked from `server` (this thread's): the exit code, None at the timeout, or
    _NOT_FORKED when the server failed (it is dropped for the rest of the run; the child
    starts fresh)."""
    from core.forkserver import ForkServerError

    path = [str(root), str(REPO_ROOT)]
    log.write_text("")  # the child truncates and writes it; it exists even if the fork fails
    try:
        pid = server.start(args, log, {**child_env(root), **server.env,
                                       STACKS_DIR_ENV: str(stacks_dir(log))}, token, path, module)
    except ForkServerError:
        server.close()
        _thread.server = None
        return _NOT_FORKED
    code: int | None = None
    finished = False
    try:
        _register(pid)
        code = server.wait(pid, timeout_s)
        finished = code is not None
        if not finished:
            ask_for_stacks(pid, log)
    except ForkServerError:
        finished = True  # the server is gone; the child's log and result say what it did
        _thread.server = None
    finally:  # timeout, Ctrl-C or a normal exit: nothing it started keeps running
        kill_group(pid)
        _unregister(pid)
        if not finished and _thread.server is not None:
            try:  # the server reports the killed child's exit; read it to stay in step
                server.wait(pid, 30.0)
            except (ForkServerError, KeyboardInterrupt):
                server.close()
                _thread.server = None
    return code
