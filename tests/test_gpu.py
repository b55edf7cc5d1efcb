"""GPU-only checks (skipped on CPU): the whole planted suite on a real GPU, with the
default adaptive timing a user gets — the side-stream cheats (one slowed by back-pressure),
the timer patch and the graph-mode cheats fail, a memory saving moved into setup() is seen
through, the launch-bound honest pair and every other
twin pass, and graph-timed samples hold GPU time below the host's launch time."""
from __future__ import annotations

import pytest
import torch

from tests.test_planted import check_verdicts, run_planted
from core.goals import ratio_of

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_planted_suite_on_the_gpu(fake_root, tmp_path):
    chapter, rows = run_planted(fake_root, tmp_path, iterations=None)
    ran = check_verdicts(chapter, rows)
    for name in ("stream_escape", "stream_backpressure", "stream_joined", "launch_bound", "timer",
                 "graph", "graph_capture_answer", "graph_host_sync", "memory_chunked",
                 "memory_setup_workspace", "memory_first_answer",
                 "memory_lazy_workspace"):
        assert name in ran, f"{name} did not run on the GPU: {rows[name].reason}"
    # where one stream cheat's side stream shares the caller's hardware queue it is timed in
    # full (TIMED_IN_FULL_OK); their streams are consecutive, so the other one is caught
    assert any(rows[n].status == "failed" for n in ("stream_escape", "stream_backpressure")), \
        "neither stream cheat was caught"
    honest = rows["launch_bound"]
    assert 0.5 < honest.speedup < 3, honest.speedup
    graph = rows["graph"]  # replayed K calls per sample: GPU time, below the eager host time
    assert graph.timing.graph_calls > 1 and graph.baseline.graph_calls > 1
    assert graph.timing.median_ms < graph.timing.host_ms, (graph.timing.median_ms, graph.timing.host_ms)
    assert not graph.host_bound
    # goal "memory": chunking the hidden layer saves ~2.3x; moving it into setup() saves
    # nothing, because a side's footprint includes what its setup() keeps
    honest, moved = rows["memory_chunked"], rows["memory_setup_workspace"]
    print("memory ratios", ratio_of(honest), ratio_of(moved), honest.baseline.memory,
          honest.timing.memory, moved.timing.memory)
    assert 2.0 < ratio_of(honest) < 2.6, ratio_of(honest)
    assert 0.95 < ratio_of(moved) < 1.05, ratio_of(moved)
    assert honest.baseline.memory.call_bytes >= 256 * 2**20
    assert moved.timing.memory.resident_bytes >= 384 * 2**20
    lazy = rows["memory_lazy_workspace"]  # a workspace built on the first call is held
    assert 0.95 < ratio_of(lazy) < 1.05, ratio_of(lazy)
    for name in ("stream_escape", "stream_backpressure", "launch_bound", "stream_joined"):
        print(name, rows[name].status, rows[name].speedup, rows[name].reason[:200])

