"""core.signing: the token is handed out once, when the child asks for it."""
from __future__ import annotations

import os
import subprocess
import sys

from core.signing import read_token
from tests.conftest import run_with_desk

ASK_TWICE = ("from core.signing import read_token\n"
             "print(repr(read_token())); print(repr(read_token()))\n")


def _child(script: str, stdin) -> str:
    proc = subprocess.run([sys.executable, "-c", script], stdin=stdin, capture_output=True,
                          text=True, timeout=60, cwd=os.getcwd())
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_desk_hands_the_token_out_once():
    stdout, _ = run_with_desk([sys.executable, "-c", ASK_TWICE], "a" * 32, 60)
    assert stdout.split() == [repr("a" * 32), repr("")]  # a second asker gets nothing


def test_a_child_without_a_desk_signs_with_nothing():
    assert _child(ASK_TWICE, subprocess.DEVNULL).split() == [repr(""), repr("")]


def test_read_token_in_this_process_without_a_desk_is_empty(monkeypatch):
    read, write = os.pipe()  # stdin a pipe holding a token, as children got it before
    os.write(write, b"b" * 32 + b"\n")
    os.close(write)
    saved = os.dup(0)
    try:
        os.dup2(read, 0)
        assert read_token() == ""  # only a desk answers: no token waits in a pipe
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read)
