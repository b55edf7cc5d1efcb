"""Anti-cheat rules, per-pair timeouts, --resume, Ctrl-C and early bad-input errors."""
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
from core.integrity import copy_state, escaped_work, input_mutations, stale_outputs
from core.report import throttle_notes
from core.runner import RunOptions, load_finished, pair_timeout, run_suite
from core.timing import Batch
from tests.conftest import GOOD_RUN, vec_chapter_files, vec_pair_file


# --- work escaping the timed stream -------------------------------------------------------

def test_honest_batches_pass_the_escape_rule():
    # launch + sync latency of tens of µs per batch, launch-bound gaps inside the span
    batches = [Batch([0.1] * 100, span_ms=12.0, wall_ms=12.08) for _ in range(10)]
    assert escaped_work(batches, "cuda") is None


def test_side_stream_backlog_is_flagged():
    # events saw ~nothing; the sync waited for 100 ms of work queued on another stream
    batches = [Batch([0.004] * 100, span_ms=0.5, wall_ms=100.0)]
    message = escaped_work(batches, "cuda")
    assert message and "escaped the timed stream" in message and "current_stream" in message


def test_escape_rule_scales_with_the_span():
    # 30% beyond a long span is flagged, 10% is not
    assert escaped_work([Batch([1.0], span_ms=100.0, wall_ms=130.0)], "cuda")
    assert escaped_work([Batch([1.0], span_ms=100.0, wall_ms=110.0)], "cuda") is None


def test_escape_rule_does_not_apply_on_cpu():
    assert escaped_work([Batch([1.0], span_ms=1.0, wall_ms=50.0)], "cpu") is None


# --- inputs mutated, stale outputs --------------------------------------------------------

class _Bench:
    def __init__(self):
        self.x = torch.arange(8.0)
        self.out = torch.full((8,), float("nan"))


def test_input_mutation_is_named():
    bench = _Bench()
    before = copy_state(bench)
    bench.x.mul_(2)
    assert "modified its inputs (x)" in input_mutations(bench, before, [bench.out])


def test_writing_the_output_buffer_is_not_a_mutation():
    bench = _Bench()
    before = copy_state(bench)
    bench.out.copy_(bench.x)
    assert input_mutations(bench, before, [bench.out]) is None
    assert stale_outputs(bench, before, [bench.out]) is None


def test_unwritten_setup_buffer_as_output_is_stale():
    bench = _Bench()
    bench.out = bench.x * 3  # "computed in setup"
    before = copy_state(bench)
    assert "`out`, a buffer filled in setup()" in stale_outputs(bench, before, [bench.out])


def test_view_of_setup_buffer_counts_as_that_buffer():
    bench = _Bench()
    before = copy_state(bench)
    assert stale_outputs(bench, before, [bench.x[2:]]) is not None


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
    assert hung["status"] == "failed" and "timed out after 3 s" in hung["reason"]
    assert "TIMEOUT_S in ch93/baseline_vec.py" in hung["reason"]
    assert good["examples"][0]["status"] == "ok"


def test_resume_keeps_finished_pairs(make_chapter, fake_root, fast_options):
    make_chapter("ch93", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    make_chapter("ch94", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    first = run_suite(select(["ch93"], root=fake_root), fast_options)
    kept = first.pairs[0]
    options = RunOptions(iterations=3, warmup=1, output_dir=fast_options.output_dir,
                         resume=first.run_dir)
    second = run_suite(select(["ch93", "ch94"], root=fake_root), options)
    assert second.run_dir == first.run_dir
    assert second.pairs[0] == kept  # not measured again
    assert [p["pair"] for p in second.pairs] == ["ch93:vec", "ch94:vec"]
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
    env = {**os.environ, "AISP_ROOT": str(fake_root), "PYTHONPATH": str(REPO_ROOT)}
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
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    final = json.loads((stream.parent / "results.json").read_text())
    assert final["interrupted"] is True
    assert [p["pair"] for p in final["pairs"]] == ["ch93:vec"]
    assert final["pairs"][0]["examples"][0]["status"] == "ok"


# --- bad input found before any work --------------------------------------------------------

def test_malformed_expectations_stop_the_run_before_it_starts(make_chapter, fake_root, tmp_path):
    chapter = make_chapter("ch93", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    bad = chapter / "expectations_h100.json"  # another GPU's file: still checked
    bad.write_text("{not json")
    options = RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs")
    with pytest.raises(ExpectationsError, match="expectations_h100.json"):
        run_suite(select(["ch93"], root=fake_root), options)
    assert not (tmp_path / "runs").exists()  # no empty run directory left behind
    assert bad.read_text() == "{not json"


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
    reason = result.pairs[0]["examples"][0]["reason"]
    assert "broken.cu: nvcc failed" in reason and "error" in reason


def test_throttling_is_reported():
    pairs = [{"pair": "ch07:x", "clocks_start": {"temperature_c": 40},
              "clocks_end": {"throttle_reasons": 0x20 | 0x1, "sm_clock_mhz": 1200,
                             "temperature_c": 88}},
             {"pair": "ch07:y", "clocks_end": {"throttle_reasons": 0x1}}]  # idle only
    lines = throttle_notes(pairs)
    assert len(lines) == 1 and "software thermal slowdown" in lines[0] and "1200 MHz" in lines[0]
