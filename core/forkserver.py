"""A fork server: torch imported once per run, a fresh forked child per pair.

Every pair runs in a process of its own (core.process). Started from scratch, each of those
processes spends a second or two importing torch and the harness before the pair's code
runs. The fork server is one process, started by the runner for a run, that imports torch
and core.child once, never touches CUDA, and forks a child per pair on request. The child
gets what a fresh process gets: its own session and process group (killed as a group at the
end, as before), its log file as stdout and stderr, the pair's environment, the chapters'
root first on sys.path, the token desk on its stdin (the server keeps the token and hands it
out when the child signs, core.signing), and CUDA initialised for the first time
in it (a forked process may initialise CUDA if its parent never did). It then runs
core.child's main unchanged.

Protocol (the server's stdin and stdout, one JSON object per line):
    runner -> server  {"module": name, "args": [...], "log": path, "env": {...},
                       "cwd": path, "path": [dirs], "token": hex}
    server -> runner  {"pid": N}                  the child exists
    server -> runner  {"exit": N, "code": C}      it ended (C < 0: killed by signal -C)

A pair's main child uses it, and so do the run's device probe and requirements check
(core.process.FORKED lists them; each with no extra environment beyond the one the server
was started with): cold starts, profiling and load tests keep fresh processes, since their
point is a process that starts from nothing. If the server cannot start or dies, the runner
goes back to fresh processes for the rest of the run (and says so in the pair's log).
"""
from __future__ import annotations

import importlib
import io
import json
import os
import random
import select
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from core import REPO_ROOT
from core.hardware import cuda_survives_fork
from core.signing import TokenDesk, run_main

START_TIMEOUT_S = 120.0  # importing torch on a busy machine

# The compiler front end a pair's torch.compile / FlexAttention / Triton code imports on first
# use (dynamo, AOT autograd, FlexAttention, Triton): ~2 s per process, paid by every pair that
# compiles. None of these starts CUDA, a thread or Inductor's compile workers. Inductor's own
# modules are left to the child: on an H100 host, importing torch._inductor.compile_fx (or any
# module that imports it) here left every forked child unable to start CUDA, which a CPU-only
# machine cannot show. So every server start also checks that a forked child can still use
# CUDA (cuda_survives_fork); if not, the runner starts a server without the preload.
PRELOADED = ("torch._dynamo", "torch._functorch.aot_autograd", "torch.nn.attention.flex_attention",
             "triton", "triton.compiler")


class ForkServerError(RuntimeError):
    """The server did not answer as the protocol says; the runner stops using it."""


class ForkServer:
    """The runner's handle on one server process (one child at a time; a smoke run side by
    side has one server per job thread, core.process.fork_server)."""

    def __init__(self, preload: bool = True, env: dict[str, str] | None = None) -> None:
        # `env`: set in the server before it imports torch, and in every child it forks (a
        # smoke run's share of the cores: OpenMP reads its thread count when torch loads)
        self.env = dict(env or {})
        self._start(preload)
        ready = self._read(START_TIMEOUT_S)
        if preload and ready == {"ready": False, "why": PRELOAD_BROKE_CUDA}:
            self.close()  # it cannot unimport what broke CUDA: a server without the preload
            self._start(preload=False)
            ready = self._read(START_TIMEOUT_S)
        if ready != {"ready": True}:
            self.close()
            raise ForkServerError(f"it did not start (said {ready!r})")

    def _start(self, preload: bool) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "core.forkserver", *([] if preload else ["--no-preload"])],
            cwd=REPO_ROOT, env={**os.environ, **self.env}, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        self._buffer = b""

    def start(self, args: list[str], log: Path, env: dict[str, str], token: str,
              path: list[str], module: str = "core.child") -> int:
        """Fork a child running `python -m MODULE ARGS`; its pid (also its process group)."""
        request = {"module": module, "args": args, "log": str(log), "env": env, "cwd": str(REPO_ROOT),
                   "path": path, "token": token}
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise ForkServerError(f"it is gone ({exc})") from exc
        reply = self._read(30.0)
        if not reply or "pid" not in reply:
            raise ForkServerError(f"no pid for the child (said {reply!r})")
        return int(reply["pid"])

    def wait(self, pid: int, timeout_s: float | None) -> int | None:
        """The child's exit code (negative: killed by that signal), or None at the timeout."""
        reply = self._read(timeout_s)
        if reply is None:
            return None
        if reply.get("exit") != pid:
            raise ForkServerError(f"expected the exit of {pid}, got {reply!r}")
        return int(reply["code"])

    def _read(self, timeout_s: float | None) -> dict[str, Any] | None:
        """The next message; None when `timeout_s` passes first."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if left is not None and left == 0.0:
                return None
            readable, _, _ = select.select([fd], [], [], left)
            if not readable:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise ForkServerError(f"it exited (code {self.proc.poll()})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass


# --- in the server ---------------------------------------------------------------------------
def _send(message: dict[str, Any]) -> None:
    os.write(1, (json.dumps(message) + "\n").encode())  # fd 1 is the protocol pipe, unbuffered


def _run_child(request: dict[str, Any], desk: Any) -> None:
    """In the forked child: become a fresh process, then run the module's main (core.child's
    for a pair), its stdin the token desk's socket (core.signing); never returns."""
    try:
        desk.mine.close()  # the server's end: the token stays in the server
        os.setsid()  # its own session and process group, as start_new_session gives
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)  # replaces the protocol pipes (fds 0 and 1) in the child
        os.dup2(log, 2)
        os.close(log)
        os.dup2(desk.child_end.fileno(), 0)
        desk.child_end.close()
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.path[:0] = [p for p in request["path"] if p not in sys.path[:len(request["path"])]]
        signal.signal(signal.SIGINT, signal.default_int_handler)
        random.seed()  # not the server's state: every child draws its own
    except BaseException:  # noqa: BLE001 - the log (if it opened) says why; the runner sees 1
        traceback.print_exc()
        os._exit(1)
    run_main(request.get("module", "core.child"), request["args"])


PRELOAD_BROKE_CUDA = "a child forked after the preload cannot use CUDA"
CUDA_BROKEN = "a child forked from the server cannot use CUDA"


def preload(modules: tuple[str, ...] = PRELOADED) -> list[str]:
    """Import what every compiling child would import; the names that could not be imported."""
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional module: the child imports it, or fails, itself
            missing.append(name)
    return missing


def serve(with_preload: bool = True) -> None:
    import torch  # noqa: F401 - the point of the server: imported once, CUDA untouched

    from core import child, pairfile, toolchild  # noqa: F401 - and the harness, before any fork

    if with_preload:
        preload()
    # Checked, not assumed: a preload of Inductor's modules once started CUDA here on an H100
    # host, and every child of that run failed with "initialization error".
    if not cuda_survives_fork():
        _send({"ready": False, "why": PRELOAD_BROKE_CUDA if with_preload else CUDA_BROKEN})
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner stops it; Ctrl-C is the runner's
    _send({"ready": True})
    for line in sys.stdin.buffer:
        request = json.loads(line)
        desk = TokenDesk(request["token"])  # this server, not the child, keeps the token
        pid = os.fork()
        if pid == 0:
            _run_child(request, desk)  # never returns
        desk.close_child_end()
        desk.start()
        _send({"pid": pid})
        _, status = os.waitpid(pid, 0)
        desk.close()  # before the next fork: no thread of it runs then
        _send({"exit": pid, "code": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    serve(with_preload="--no-preload" not in sys.argv[1:])
