"""GPU-only checks (skipped on CPU): the whole planted suite on a real GPU, with the
default adaptive timing a user gets — the side-stream cheats (one slowed by back-pressure)
and the timer patch fail, the launch-bound honest pair and every other twin pass."""
from __future__ import annotations

import pytest
import torch

from tests.test_planted import check_verdicts, run_planted

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_planted_suite_on_the_gpu(fake_root, tmp_path):
    chapter, rows = run_planted(fake_root, tmp_path, iterations=None)
    ran = check_verdicts(chapter, rows)
    for name in ("stream_escape", "stream_backpressure", "stream_joined", "launch_bound", "timer"):
        assert name in ran, f"{name} did not run on the GPU: {rows[name].reason}"
    honest = rows["launch_bound"]
    assert 0.5 < honest.speedup < 3, honest.speedup
    for name in ("stream_escape", "stream_backpressure", "launch_bound", "stream_joined"):
        print(name, rows[name].status, rows[name].speedup, rows[name].reason[:200])
