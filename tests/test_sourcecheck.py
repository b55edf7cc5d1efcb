"""The static check of pair sources (core.sourcecheck): every rule flags its pattern with the
file and line, honest uses of the same modules pass, and no pair in ch01-ch20 is refused."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from core import REPO_ROOT
from core.sourcecheck import check_file, check_pair_files, describe


def _findings(tmp_path: Path, source: str, name: str = "optimized_x.py") -> list[str]:
    chapter = tmp_path / "ch95"
    chapter.mkdir(exist_ok=True)
    path = chapter / name
    path.write_text(textwrap.dedent(source).lstrip())
    return [str(f) for f in check_file(path)]


@pytest.mark.parametrize("source, what", [
    ("import sys\nframe = sys._getframe(1)\n", "reads the call stack (sys._getframe)"),
    ("import inspect as i\nfor f in i.stack():\n    pass\n", "reads the call stack (inspect.stack)"),
    ("from inspect import currentframe\nf = currentframe()\n", "imports inspect.currentframe"),
    ("def f(e):\n    return e.__traceback__.tb_frame\n", "reads a frame (.tb_frame)"),
    ("def f(g):\n    return g.f_back.f_locals\n", "reads a frame (.f_back)"),
    ("import gc\nobjs = gc.get_objects()\n", "walks the garbage collector's objects (gc.get_objects)"),
    ("import sys\nline = sys.stdin.readline()\n", "reads sys.stdin: the harness's signing channel"),
    ("import os\nraw = os.read(0, 64)\n", "os.read() of fd 0: the harness's signing channel"),
    ("import socket as s\nd = s.socket(fileno=0)\n", "socket.socket() of fd 0: the harness's signing channel"),
    ("from gc import get_referrers as refs\n", "imports gc.get_referrers"),
    ("def f(g, h):\n    g.__code__ = h.__code__\n", "assigns __code__"),
    ("def f(o, K):\n    o.__class__ = K\n", "assigns __class__"),
    ("def f(g):\n    setattr(g, '__defaults__', (1,))\n", "setattr() of __defaults__"),
    ("import core.verify\ncore.verify.DEFAULT_TOLERANCE = {}\n", "assigns core.verify.DEFAULT_TOLERANCE"),
    ("from core import verify as v\nv.compare = len\n", "assigns v.compare"),
    ("from core.verify import DEFAULT_TOLERANCE\nDEFAULT_TOLERANCE['x'] = 1\n",
     "assigns DEFAULT_TOLERANCE['x']"),
    ("import core.timing\nsetattr(core.timing, '_perf_counter', len)\n", "setattr() on core"),
    ("import core.child as c\ndel c.GUARD\n", "deletes c.GUARD"),
    ("from core.benchmark import Benchmark\nBenchmark.run = None\n", "assigns Benchmark.run"),
    ("import torch\ntorch.Tensor.abs = lambda self: self\n", "assigns torch.Tensor.abs"),
    ("import torch as t\nsetattr(t.Tensor, 'sum', None)\n", "setattr() on torch.Tensor"),
    ("import builtins\nbuiltins.isinstance = lambda *a: True\n", "assigns builtins.isinstance"),
    ("import _thread\n_thread.start_new_thread(print, ())\n",
     "starts a thread outside threading.Thread (_thread.start_new_thread)"),
    ("from _thread import start_new_thread as go\ngo(print, ())\n", "imports _thread.start_new_thread"),
    ("import threading\nthreading.Thread.start = lambda self: None\n", "assigns threading.Thread.start"),
])
def test_each_rule_names_the_file_and_line(tmp_path, source, what):
    found = _findings(tmp_path, source)
    assert found, f"not flagged: {source!r}"
    assert any(what in f for f in found), found
    assert all(f.startswith("ch95/optimized_x.py:") for f in found)
    line = int(found[0].split(":")[1])
    assert 1 <= line <= source.count("\n")


@pytest.mark.parametrize("source", [
    "import inspect\nn = len(inspect.signature(print).parameters) if False else 0\n",
    "import sys\nprint(sys.version_info >= (3, 11))\n",
    "import gc\ngc.collect()\n",
    "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\nx = torch.ones(2)\nx.add_(1)\n",
    "import torch._dynamo\ntorch._dynamo.config.cache_size_limit = 64\n",
    "from core.benchmark import Benchmark, Workload\nclass B(Benchmark):\n"
    "    def setup(self, ctx):\n        self.w = 1\n        self.cfg = dict(a=1)\n        self.cfg['a'] = 2\n",
    "import time\nstart = time.perf_counter()\n",
    "import threading\nt = threading.Thread(target=print, daemon=True)\nt.start()\nt.join()\n",
    "import os\nwith open('cfg.json') as f:\n    data = f.read()\nfd = os.open('x', 0)\nos.read(fd, 8)\n",
])
def test_what_honest_pairs_do_passes(tmp_path, source):
    assert _findings(tmp_path, source) == []


def test_a_finding_in_a_shared_module_is_reported_for_the_pair_file_that_imports_it(tmp_path):
    _findings(tmp_path, "import gc\nseen = gc.get_referrers\n", name="_x_common.py")
    _findings(tmp_path, "from ._x_common import seen\n", name="baseline_x.py")
    _findings(tmp_path, "from ch95._x_common import seen\n", name="optimized_x.py")
    chapter = tmp_path / "ch95"
    found = check_pair_files([chapter / "baseline_x.py", chapter / "optimized_x.py"])
    assert set(found) == {chapter / "baseline_x.py", chapter / "optimized_x.py"}
    assert "ch95/_x_common.py:2: walks the garbage" in describe(found[chapter / "baseline_x.py"])


def test_no_pair_in_the_chapters_is_refused():
    files = sorted(p for p in REPO_ROOT.glob("ch[0-9][0-9]/*.py") if not p.name.startswith("__"))
    assert len(files) > 300
    refused = check_pair_files(files)
    assert refused == {}, {str(p): [str(f) for f in f_] for p, f_ in refused.items()}
