"""The fork server imports the compiler stack once, and that must leave it safe to fork."""
import subprocess
import sys

import pytest
import torch

from core import REPO_ROOT, forkserver
from tests.conftest import cpu_only


def test_preloading_the_compiler_stack_starts_no_thread_and_leaves_cuda_alone():
    # in a fresh interpreter, as the server does it: a thread alive at fork time (a compile
    # worker pool, a watchdog) would be copied without its owner and could deadlock a child
    script = ("import threading, torch, sys; from core import forkserver; "
              "missing = forkserver.preload(); "
              "print(threading.active_count(), torch.cuda.is_initialized(), "
              "all(m in sys.modules for m in forkserver.PRELOADED if m not in missing), "
              "'torch._inductor.compile_fx' in missing)")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=300, check=True).stdout.split()
    assert out == ["1", "False", "True", "False"]  # Inductor itself is always there


def test_a_module_that_cannot_be_imported_is_reported_not_raised():
    assert forkserver.preload(("json", "aisp_no_such_module")) == ["aisp_no_such_module"]


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="needs a CUDA GPU: on a CPU the forked child finds no GPU and passes trivially")
def test_a_child_forked_from_a_server_that_never_touched_cuda_can_use_it():
    assert forkserver.cuda_survives_fork()


@cpu_only
def test_the_fork_check_tells_a_child_that_finds_no_gpu_from_one_that_cannot_use_it(monkeypatch):
    # on a CPU: finding no GPU passes; a child told a GPU is there (the patch is inherited
    # through fork) and failing to use it is reported as a broken fork, not passed over
    assert forkserver.cuda_survives_fork()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert not forkserver.cuda_survives_fork()


def test_a_preload_that_broke_cuda_gives_way_to_a_server_without_it(monkeypatch):
    # what an H100 host showed: after the preload, no forked child could start CUDA
    started, replies = [], [{"ready": False, "why": forkserver.PRELOAD_BROKE_CUDA}, {"ready": True}]
    monkeypatch.setattr(forkserver.ForkServer, "_start", lambda self, preload: started.append(preload))
    monkeypatch.setattr(forkserver.ForkServer, "_read", lambda self, timeout: replies.pop(0))
    monkeypatch.setattr(forkserver.ForkServer, "close", lambda self: None)
    forkserver.ForkServer()
    assert started == [True, False]
    started.clear()
    replies[:] = [{"ready": False, "why": forkserver.CUDA_BROKEN}]
    with pytest.raises(forkserver.ForkServerError, match="cannot use CUDA"):
        forkserver.ForkServer()  # no server at all: the run starts fresh processes
    assert started == [True]
