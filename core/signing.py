"""The result protocol: a token that signs a child's result, handed out only when it signs.

The parent (core.process, or the fork server for a forked child) makes a fresh token per child
and keeps it at its end of a socket that is the child's stdin (`TokenDesk`). The child's
harness asks for it only when its checks are done, just before it writes the result
(`read_token`, then `deliver`, which exits at once with `os._exit`): while the pair's code
runs, the token is in no memory of the child, so no frame, gc walk or memory scan finds it,
and a file the pair writes carries no token and is rejected. The desk answers once; a second
request gets an empty line.

Where the line is: the request is a line on stdin, which any code in the child can send.
The static check (core.sourcecheck) refuses the plain spelling (`sys.stdin`, reads of fd 0);
a pair that builds those names at run time, asks first and writes a result of its own can
still forge one. The harness then finds no token when it asks, so its own result is unsigned.
"""
from __future__ import annotations

import importlib
import json
import os
import socket
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, NoReturn

from core import REPO_ROOT, atomic

REQUEST = b"sign\n"


class TokenDesk:
    """The parent's end: a socket pair whose other end becomes the child's stdin, and a thread
    that answers the first request with the token (later ones with an empty line)."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.mine, self.child_end = socket.socketpair()
        self.thread = threading.Thread(target=self._serve, daemon=True, name="aisp-token-desk")

    def start(self) -> None:
        """Serve; call once the child holds its end (close_child_end in this process)."""
        self.thread.start()

    def close_child_end(self) -> None:
        self.child_end.close()

    def _serve(self) -> None:
        answer = f"{self.token}\n".encode()
        try:
            with self.mine.makefile("rb") as lines:
                for line in lines:  # ends when every copy of the child's end is closed
                    if line == REQUEST:
                        self.mine.sendall(answer)
                        answer = b"\n"
        except OSError:
            pass

    def close(self) -> None:
        """After the child ended: stop serving (the thread ends at once)."""
        for sock in (self.mine, self.child_end):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self.thread.join(timeout=5.0)


def read_token() -> str:
    """In the child, when its checks are done: ask the desk on stdin for the token. "" when
    stdin is no desk (a child started by hand) or the token was handed out already."""
    try:
        desk = socket.socket(fileno=os.dup(0))
    except OSError:
        return ""
    try:
        desk.sendall(REQUEST)
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = desk.recv(256)
            if not chunk:
                break
            reply += chunk
        return reply.decode(errors="replace").strip()
    except OSError:
        return ""
    finally:
        desk.close()


def deliver(path: Path, token: str, payload: dict[str, Any]) -> None:
    """In the child: write the signed result and exit at once (no atexit, no pair threads)."""
    atomic.write_text(path, json.dumps({"token": token, "payload": payload}))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_main(module: str, args: list[str]) -> NoReturn:
    """In a forked process (a pair's child from the fork server, a forked rank): run
    `python -m MODULE ARGS` as a fresh process would (its stdin, the token desk's socket, is
    inherited), and exit with its code at once (never the parent's atexit handlers or pipes)."""
    code = 1
    try:
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
