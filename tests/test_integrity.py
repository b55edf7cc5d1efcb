"""Anti-cheat rules (unit level; tests/test_planted.py runs the planted pairs end to end),
per-pair timeouts, --resume, Ctrl-C and early bad-input errors."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from core import REPO_ROOT
from core.discovery import select
from core.expectations import ExpectationsError
from core.inputs import aliased, changed, clone, refill
from core.integrity import Guard, alias_problem, escaped_work, left_running, mutation_problem
from core.timing import Probe
from core.record import PairResult
from core.report import throttle_notes
from core.runner import RunOptions, load_finished, pair_timeout, run_suite
from core.timing import Batch
from tests.conftest import CPU_KEY, GOOD_RUN, vec_chapter_files, vec_pair_file


# --- work escaping the timed stream -------------------------------------------------------

GAP = 0.006  # ms: a typical measured launch gap (host loop + event calls between samples)


def test_gpu_bound_batches_pass_the_escape_rule():
    # back-to-back GPU-bound samples cover the wall time but for the sync latency
    batches = [Batch([0.1] * 100, wall_ms=10.05) for _ in range(10)]
    assert escaped_work(batches, GAP, "cuda") is None


def test_honest_launch_bound_batches_pass():
    # 5 µs samples with the host's own gap between them: ~55% coverage, all of it explained
    batches = [Batch([0.005] * 200, wall_ms=200 * (0.005 + GAP) + 0.05) for _ in range(5)]
    assert escaped_work(batches, GAP, "cuda") is None


def test_side_stream_backlog_is_flagged():
    # events saw ~nothing; the sync waited for 100 ms of work queued on another stream
    message = escaped_work([Batch([0.004] * 100, wall_ms=100.0)], GAP, "cuda")
    assert message and "escaped the timed stream" in message and "current_stream" in message


def test_back_pressure_cannot_dilute_the_rule():
    # The v1 hole: the host, slowed by the side stream's backlog, stretched the events' span
    # as much as the wall time, so wall - span stayed small. The samples still hold ~nothing.
    batches = [Batch([0.01] * 50, wall_ms=109.0) for _ in range(4)]
    assert escaped_work(batches, GAP, "cuda")


def test_harness_work_between_samples_is_accounted_for():
    # a cold-mode flush of 0.5 ms before each sample is the harness's, not escaped work
    flushed = Batch([0.2] * 20, wall_ms=20 * 0.7 + 0.1, harness_ms=20 * 0.5)
    assert escaped_work([flushed], GAP, "cuda") is None
    unflushed = Batch([0.2] * 20, wall_ms=20 * 0.7 + 0.1, harness_ms=0.0)
    assert escaped_work([unflushed], GAP, "cuda")


def test_the_gpu_waiting_for_the_harness_host_work_is_not_escaped_work():
    # 40 µs samples; the harness's refill before each costs the host 60 µs and the GPU 5 µs,
    # so the GPU waits ~55 µs a sample for the host: the harness's time, not the pair's (up to
    # the harness's whole host time is excused)
    host_bound = dict(wall_ms=100 * (0.040 + 0.060) + 0.05, harness_ms=100 * 0.005)
    assert escaped_work([Batch([0.040] * 100, **host_bound, harness_host_ms=100 * 0.060)], GAP, "cuda") is None
    assert escaped_work([Batch([0.040] * 100, **host_bound)], GAP, "cuda")  # unexplained without it
    # work hidden on a side stream is not excused by it: 20 ms unaccounted, 5.5 ms excused
    hidden = Batch([0.040] * 100, wall_ms=100 * 0.045 + 20.0, harness_ms=0.5, harness_host_ms=6.0)
    assert escaped_work([hidden], GAP, "cuda")


def test_a_call_that_leaves_the_gpu_busy_after_its_end_event_escaped():
    # the planted side-stream cheat on an H100: its launches (0.24 ms) are all the timed stream
    # sees; its kernels run 0.4 ms on after the end event completed
    message = left_running(Probe(host_ms=0.24, gpu_ms=0.24, left_ms=0.42))
    assert message and "still busy 0.420 ms" in message
    assert left_running(Probe(host_ms=0.05, gpu_ms=1.0, left_ms=0.012)) is None  # a sync's latency
    # a large call may leave up to a tenth of itself running (a sync's latency, jitter)...
    assert left_running(Probe(host_ms=0.1, gpu_ms=10.0, left_ms=0.9)) is None
    assert left_running(Probe(host_ms=0.1, gpu_ms=10.0, left_ms=1.3))  # ...not more
    # ...and a small one 50 µs
    assert left_running(Probe(host_ms=0.01, gpu_ms=0.02, left_ms=0.04)) is None
    assert left_running(Probe(host_ms=0.01, gpu_ms=0.02, left_ms=0.06))
    assert left_running(None) is None  # the CPU: no probe


def test_escape_rule_does_not_apply_on_cpu():
    assert escaped_work([Batch([1.0], wall_ms=50.0)], GAP, "cpu") is None


# --- inputs: aliasing, mutation, refill ----------------------------------------------------

def test_alias_and_mutation_name_the_input():
    x, y = torch.arange(4.0), torch.ones(4)
    inputs = {"x": x, "y": y}
    assert aliased([("output", x[1:])], inputs) == ["output is inputs['x']"]
    assert aliased([("output", x.clone())], inputs) == []
    assert "returned its input (output is inputs['x'])" in alias_problem(aliased([("output", x)], inputs))
    before = clone(inputs)
    y.mul_(2)
    assert changed(before, inputs) == ["inputs['y']"]
    assert "modified its inputs (inputs['y'])" in mutation_problem(changed(before, inputs))
    assert mutation_problem([]) is None and alias_problem([]) is None


def test_refill_keeps_identity_and_rejects_new_shapes():
    x = torch.zeros(4)
    inputs = (x, 3)  # constants ride along
    refill(inputs, (torch.ones(4), 3))
    assert inputs[0] is x and torch.equal(x, torch.ones(4))
    with pytest.raises(ValueError, match="different structure, shape or dtype"):
        refill(inputs, (torch.ones(5), 3))


def test_nan_inputs_compare_equal_to_themselves():
    x = torch.tensor([float("nan"), 1.0])
    assert changed(clone(x), x) == []


# --- timing and harness functions replaced by a pair ---------------------------------------

def test_guard_names_replaced_functions(monkeypatch):
    guard = Guard()
    assert guard.tampered() == []
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 0.001)
    import core.verify

    monkeypatch.setattr(core.verify, "compare", lambda *a, **k: None)
    found = guard.tampered()
    assert {"time.perf_counter", "torch.cuda.Event.elapsed_time", "core.verify.compare"} <= set(found)
    assert "replaced harness or timing functions" in guard.problem()


def test_guard_passes_ordinary_torch_use():
    guard = Guard()
    x = torch.randn(64)
    (torch.sin(x) * 2).sum().item()
    torch.manual_seed(3)
    assert guard.tampered() == []


def test_timing_uses_the_clock_bound_at_import(monkeypatch):
    from core import timing

    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)  # a pair's patch
    batch = timing.measure_cpu(lambda: sum(range(20000)), 3)
    assert min(batch.samples_ms) > 0 and batch.wall_ms > 0


# --- per-pair timeout, resume, Ctrl-C ------------------------------------------------------

def test_pair_timeout_reads_the_module_constant(tmp_path):
    from core.discovery import Pair

    file = tmp_path / "baseline_x.py"
    file.write_text("import torch\nTIMEOUT_S = 42\n")
    assert pair_timeout(Pair("ch90", "x", file), 600.0) == 42.0
    file.write_text("TIMEOUT_S = 'soon'\n")
    assert pair_timeout(Pair("ch90", "x", file), 600.0) == 600.0
    file.write_text("def broken(:\n")
    assert pair_timeout(Pair("ch90", "x", file), 600.0) == 600.0


def test_timeout_override_kills_only_that_pair(make_chapter, fake_root, fast_options):
    files = vec_chapter_files(default=vec_pair_file("while True:\n    time.sleep(0.2)"))
    files["baseline_vec.py"] = "TIMEOUT_S = 3\n" + files["baseline_vec.py"]
    make_chapter("ch93", files)
    make_chapter("ch94", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    started = time.monotonic()
    result = run_suite(select(["ch93", "ch94"], root=fake_root), fast_options)
    assert time.monotonic() - started < 60  # not the 120 s default of fast_options
    hung, good = result.pairs
    assert hung.status == "failed" and "timed out after 3 s" in hung.reason
    assert "TIMEOUT_S in ch93/baseline_vec.py" in hung.reason
    # the child wrote its stacks at the timeout: the reason says where the pair's code hung
    assert "the pair's code was at ch93/optimized_vec.py:" in hung.reason, hung.reason
    assert " in run " in hung.reason.split("the pair's code was at")[1]
    assert good.examples[0].status == "ok"


def test_resume_keeps_finished_pairs(make_chapter, fake_root, fast_options):
    make_chapter("ch93", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    make_chapter("ch94", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    first = run_suite(select(["ch93", "ch94"], root=fake_root), fast_options)
    kept = first.pairs[0]
    stream = first.run_dir / "results.jsonl"  # as if the run had died during the second pair
    stream.write_text(stream.read_text().splitlines()[0] + "\n")
    options = RunOptions(iterations=3, warmup=1, timeout_s=fast_options.timeout_s,
                         output_dir=fast_options.output_dir, resume=first.run_dir)
    second = run_suite(select(["ch93", "ch94"], root=fake_root), options)
    assert second.run_dir == first.run_dir
    assert second.pairs[0].to_dict() == kept.to_dict()  # not measured again
    assert [p.pair for p in second.pairs] == ["ch93:vec", "ch94:vec"]
    assert set(load_finished(first.run_dir)) == {"ch93:vec", "ch94:vec"}


def test_resume_survives_a_truncated_last_line(tmp_path):
    (tmp_path / "results.jsonl").write_text(json.dumps({"pair": "ch90:a"}) + '\n{"pair": "ch9')
    assert list(load_finished(tmp_path)) == ["ch90:a"]


def test_resume_of_a_directory_without_results_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="results.jsonl"):
        load_finished(tmp_path)


def test_ctrl_c_keeps_finished_pairs(make_chapter, fake_root, tmp_path):
    make_chapter("ch93", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    make_chapter("ch94", vec_chapter_files(default=vec_pair_file("while True:\n    time.sleep(0.2)")))
    out_dir = tmp_path / "runs"
    # PYTHONFAULTHANDLER: should the CLI ever hang after Ctrl-C, SIGABRT prints where it is
    env = {**os.environ, "AISP_ROOT": str(fake_root), "PYTHONPATH": str(REPO_ROOT),
           "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.aisp", "bench", "run", "--targets", "ch93", "ch94",
         "--iterations", "3", "--warmup", "1", "--output-dir", str(out_dir)],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    stream = None
    while time.monotonic() < deadline:  # wait until the first pair is on disk
        streams = list(out_dir.glob("*/results.jsonl"))
        if streams and streams[0].read_text().count("\n") >= 1:
            stream = streams[0]
            break
        time.sleep(0.2)
    assert stream is not None, "the first pair never finished"
    time.sleep(1.0)  # the hanging pair is running now
    proc.send_signal(signal.SIGINT)
    try:
        stdout, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # a hang: fail with the CLI's Python stacks and its children
        children = subprocess.run(["ps", "-o", "pid,ppid,pgid,stat,wchan:24,args", "--ppid",
                                   str(proc.pid)], capture_output=True, text=True).stdout
        proc.send_signal(signal.SIGABRT)
        _, stderr = proc.communicate(timeout=30)
        pytest.fail(f"bench run did not exit 60 s after SIGINT; its children:\n{children}\n"
                    f"its stderr (faulthandler stacks at the end):\n{stderr[-6000:]}")
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    assert f"--resume {stream.parent}" in stderr  # the command that continues the run
    final = json.loads((stream.parent / "results.json").read_text())
    assert final["interrupted"] is True
    assert [p["pair"] for p in final["pairs"]] == ["ch93:vec"]
    assert final["pairs"][0]["examples"][0]["status"] == "ok"


# --- bad input found before any work --------------------------------------------------------

def test_malformed_expectations_stop_the_run_before_it_starts(make_chapter, fake_root, tmp_path):
    chapter = make_chapter("ch93", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    bad = chapter / f"expectations_{CPU_KEY}.json"  # this machine's file
    bad.write_text("{not json")
    options = RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs")
    with pytest.raises(ExpectationsError, match=f"expectations_{CPU_KEY}.json"):
        run_suite(select(["ch93"], root=fake_root), options)
    assert not list((tmp_path / "runs").glob("*"))  # no empty run directory left behind
    assert bad.read_text() == "{not json"


def test_another_machines_malformed_expectations_do_not_block_this_run(make_chapter, fake_root,
                                                                     tmp_path):
    from core.events import Note

    chapter = make_chapter("ch93", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    (chapter / "expectations_h100.json").write_text("{not json")  # blocked a CPU run before
    notes = []
    record = run_suite(select(["ch93"], root=fake_root),
                       RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs"),
                       listener=lambda e: notes.append(e.text) if isinstance(e, Note) else None)
    assert record.rows[0].status == "ok"
    assert any("expectations_h100.json" in n and "the run goes on" in n for n in notes), notes


@pytest.mark.skipif(not any(Path(p, "nvcc").exists() for p in os.environ["PATH"].split(":")),
                    reason="nvcc not installed")
def test_cu_compile_error_fails_the_pair_naming_the_file(make_chapter, fake_root, fast_options,
                                                         monkeypatch, tmp_path):
    monkeypatch.setenv("AISP_BUILD_DIR", str(tmp_path / "build"))
    files = vec_chapter_files(default=vec_pair_file(
        GOOD_RUN, setup="from pathlib import Path\nfrom core.cuda import load\n"
                        "load(Path(__file__).with_name('broken.cu'))"))
    files["broken.cu"] = '#include "aisp.cuh"\n__global__ void k() { this is not cuda; }\n'
    make_chapter("ch93", files)
    result = run_suite(select(["ch93"], root=fake_root), fast_options)
    reason = result.pairs[0].examples[0].reason
    assert "broken.cu: nvcc failed" in reason and "error" in reason


def test_throttling_is_reported():
    pairs = [PairResult(pair="ch07:x", clocks_start={"temperature_c": 40},
                        clocks_end={"throttle_reasons": 0x20 | 0x1, "sm_clock_mhz": 1200,
                                    "temperature_c": 88}),
             PairResult(pair="ch07:y", clocks_end={"throttle_reasons": 0x1})]  # idle only
    lines = throttle_notes(pairs)
    assert len(lines) == 1 and "software thermal slowdown" in lines[0] and "1200 MHz" in lines[0]


@pytest.mark.parametrize("shared_gpu", [False, True])
def test_the_escape_rule_is_off_only_beside_other_pairs(shared_gpu):
    """A planted side-stream backlog fails a pair that has the GPU to itself, and an honest
    GPU-bound batch passes; beside other pairs (a smoke run side by side, PairSpec.shared_gpu)
    their kernels fill the same gap, so the rule is off there, and the result says so."""
    import random

    from core.child import PairSession, PairSpec

    spec = PairSpec(pair="ch95:vec", baseline="ch95/baseline_vec.py", examples=[],
                    mode="smoke", shared_gpu=shared_gpu)
    session = PairSession(spec, "cuda", random.Random(0))  # touches no GPU until run()
    session.integrity.launch_gap_ms = GAP
    planted = session.escaped([Batch([0.004] * 100, wall_ms=100.0)])
    honest = session.escaped([Batch([0.1] * 100, wall_ms=10.05)])
    assert honest is None
    assert (planted is None) == shared_gpu
    assert session.integrity.escape_check == (not shared_gpu)
