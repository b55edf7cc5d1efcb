"""Smoke runs with several pairs at a time (core.side_by_side, bench run --mode smoke --jobs)."""
from __future__ import annotations

import contextlib
import json
import os
import threading
import time

import pytest

import core.process
import core.runner
from core import side_by_side
from core.discovery import select
from core.events import Note
from core.process import accept_children, kill_running, run_child
from core.record import ExampleResult, PairResult
from core.runner import RunOptions, run_suite
from tests.conftest import VEC_COMMON, cpu_only, vec_pair_file, write_chapter


def _ok(name: str) -> PairResult:
    return PairResult(pair=name, status="ok", device="cpu")


@pytest.fixture
def no_fork_servers(monkeypatch):
    """For tests whose `measure` (or run_pair) is faked and starts no child: each job thread's
    fork server (torch and the compiler stack imported, seconds each) would go unused."""
    import core.process

    monkeypatch.setattr(core.process, "open_fork_server", lambda env=None, preload=True: None)
    monkeypatch.setattr(core.runner, "fork_server", lambda env=None, preload=True: contextlib.nullcontext())


def test_jobs_run_at_the_same_time_and_failures_come_back_unkept(no_fork_servers):
    """Two jobs that each wait for the other finish only if they run at once; a failed one
    is returned for the runner to run again alone, and never kept."""
    met = threading.Barrier(2, timeout=5)

    def measure(name: str) -> PairResult:
        if name == "broken":
            return _ok(name).fail_all("always fails")
        if name == "one_variant_broken":  # the pair ran; one of its two variants failed
            result = _ok(name)
            result.examples = [ExampleResult("good", "ch95:x", "optimized_x.py"),
                               ExampleResult("bad", "ch95:x_bad", "optimized_x_bad.py")]
            result.examples[1].fail("work escaped the timed stream")
            return result
        try:
            met.wait()
            return _ok(name)
        except threading.BrokenBarrierError:
            return _ok(name).fail_all("ran alone")
    kept: list[str] = []
    failed = side_by_side.run(["a", "b", "broken", "one_variant_broken"], measure,
                              lambda job, result: kept.append(job), parallel=2)
    assert sorted(kept) == ["a", "b"]
    assert sorted(job for job, _ in failed) == ["broken", "one_variant_broken"]
    assert dict(failed)["broken"].status == "failed"


def test_one_at_a_time_is_not_side_by_side(no_fork_servers):
    """The same two jobs one at a time: neither meets the other (what the test above relies on)."""
    met = threading.Barrier(2, timeout=0.5)

    def measure(name: str) -> PairResult:
        try:
            met.wait()
            return _ok(name)
        except threading.BrokenBarrierError:
            met.reset()
            return _ok(name).fail_all("ran alone")
    failed = side_by_side.run(["a", "b"], measure, lambda job, result: None, parallel=1)
    assert [job for job, _ in failed] == ["a", "b"]


def test_an_interrupt_keeps_what_finished_and_drops_what_it_cut_short(no_fork_servers):
    """Ctrl-C (here raised in one job): the run stops and re-raises; jobs still running then
    are not kept (killed, they would read as failures), and no new job starts.

    Ordered by events, not sleeps: the interrupt comes once "quick" is kept, and the jobs still
    running return only after it (a loaded CI host once took longer than a fixed sleep to
    start the first job's fork server)."""
    kept: list[str] = []
    started: list[str] = []
    quick_kept = threading.Event()
    interrupted = threading.Event()

    def keep(job: str, result: PairResult) -> None:
        kept.append(job)
        if job == "quick":
            quick_kept.set()

    def measure(name: str) -> PairResult:
        started.append(name)
        if name == "ctrl_c":
            assert quick_kept.wait(timeout=60)
            interrupted.set()
            raise KeyboardInterrupt
        if name != "quick":  # still running when the interrupt comes, done just after it
            assert interrupted.wait(timeout=60)
            time.sleep(0.5)
        return _ok(name)
    with pytest.raises(KeyboardInterrupt):
        side_by_side.run(["quick", "ctrl_c", "slow", "later", "never"], measure, keep,
                         parallel=3)
    assert kept == ["quick"]
    assert "never" not in started


def test_default_jobs_follow_the_cores():
    assert side_by_side.default_jobs(16) == 6
    assert side_by_side.default_jobs(8) == 4
    assert side_by_side.default_jobs(2) == 1


def test_jobs_only_in_smoke_without_profiling():
    gpu = {"capability": [9, 0]}
    assert core.runner.side_by_side_jobs(RunOptions(mode="full", jobs=4), gpu) == 1
    assert core.runner.side_by_side_jobs(RunOptions(mode="smoke", jobs=3), {}) == 3
    assert core.runner.side_by_side_jobs(RunOptions(mode="smoke"), {}) == 1  # CPU: one by one
    assert core.runner.side_by_side_jobs(RunOptions(mode="smoke"), gpu) == side_by_side.default_jobs()
    assert core.runner.side_by_side_jobs(RunOptions(mode="smoke", profile="minimal"), gpu) == 1


@cpu_only
def test_kill_running_ends_a_child_another_thread_waits_for(tmp_path):
    """Ctrl-C reaches only the main thread: kill_running must end the children the smoke
    threads wait for, at once, not at their timeout."""
    outcome = {}

    def wait_for_child() -> None:  # a child that sleeps for a minute
        outcome["child"] = run_child(["-n", "1", "-r", "1", "import time; time.sleep(60)"], 60.0,
                                     tmp_path / "sleeper.log", module="timeit")
    thread = threading.Thread(target=wait_for_child)
    began = time.perf_counter()
    thread.start()
    started_by = time.monotonic() + 30  # polled, not a fixed wait: the child is running once
    while not core.process._running and time.monotonic() < started_by:  # it is registered
        time.sleep(0.05)
    assert core.process._running, "the sleeper child did not start within 30 s"
    try:
        kill_running()
        thread.join(timeout=20)
        assert not thread.is_alive()
        assert time.perf_counter() - began < 20
        assert outcome["child"].code is not None and outcome["child"].code != 0
        # a thread that starts its child only now (it was past its last check) is stopped too
        began = time.perf_counter()
        wait_for_child()
        assert time.perf_counter() - began < 20 and outcome["child"].code != 0
    finally:
        accept_children()
    again = run_child(["-n", "1", "-r", "1", "pass"], 60.0, tmp_path / "ok.log", module="timeit")
    assert again.code == 0  # children run again once accepted


# Pair `shy` fails whenever another pair is in setup() at the same time (it looks for the
# marker file `slow` keeps for 4 s); alone, it passes. `wrong` fails everywhere.
SLOW_SETUP = """
import os, pathlib
import json, torch
pathlib.Path(os.environ["AISP_TEST_SEEN"]).write_text(json.dumps({
    "omp": os.environ.get("OMP_NUM_THREADS", "unset"), "threads": torch.get_num_threads(),
    "parent": os.getppid()}))
mark = pathlib.Path(os.environ["AISP_TEST_MARKS"]) / f"slow-{os.getpid()}"
mark.write_text("")
time.sleep(4)
mark.unlink()
"""
SHY_SETUP = """
import os, pathlib
marks = pathlib.Path(os.environ["AISP_TEST_MARKS"])
for _ in range(30):
    if any(marks.iterdir()):
        raise RuntimeError("another pair is running beside me")
    time.sleep(0.2)
"""


@cpu_only
def test_smoke_side_by_side_reruns_alone_what_failed_beside_others(tmp_path, monkeypatch):
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("AISP_TEST_MARKS", str(marks))
    monkeypatch.setenv("AISP_TEST_SEEN", str(tmp_path / "threads"))
    root = tmp_path / "chapters"
    write_chapter(root, "ch95", {
        "_vec_common.py": VEC_COMMON,
        "baseline_shy.py": vec_pair_file(setup=SHY_SETUP), "optimized_shy.py": vec_pair_file(),
        "baseline_slow.py": vec_pair_file(setup=SLOW_SETUP), "optimized_slow.py": vec_pair_file(),
        "baseline_wrong.py": vec_pair_file(),
        "optimized_wrong.py": vec_pair_file("x, y = inputs\nout = x + y\nout[1] += 1.0\nreturn out"),
    })
    selection = select(["ch95"], root)
    notes: list[str] = []
    record = run_suite(selection, RunOptions(mode="smoke", iterations=3, warmup=1, jobs=3,
                                             output_dir=tmp_path / "runs"),
                       lambda event: notes.append(event.text) if isinstance(event, Note) else None)
    status = {p.pair: p.status for p in record.pairs}
    assert status == {"ch95:shy": "ok", "ch95:slow": "ok", "ch95:wrong": "failed"}
    assert [p.pair for p in record.pairs] == ["ch95:shy", "ch95:slow", "ch95:wrong"]
    assert any("ch95:shy failed beside other pairs" in n for n in notes)
    assert any("3 at a time" in n for n in notes)
    lines = [json.loads(line)["pair"]
             for line in (record.run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(lines) == ["ch95:shy", "ch95:slow", "ch95:wrong"]  # the failure beside others is not kept
    # beside others the escaped-work check is off (other pairs' kernels share the GPU); the
    # pairs run again alone have it
    checks = {p.pair: p.integrity.escape_check for p in record.pairs}
    assert checks == {"ch95:shy": True, "ch95:slow": False, "ch95:wrong": True}
    from core.report import render

    assert "1 pair ran beside others, without the escaped-work check" in render(record)
    # each child got its share of the cores for torch's thread pool, forked from its job
    # thread's own fork server (started with that share), not started afresh by the runner
    seen = json.loads((tmp_path / "threads").read_text())
    share = side_by_side.child_env(3)["OMP_NUM_THREADS"]
    assert (seen["omp"], seen["threads"]) == (share, int(share))
    assert seen["parent"] != os.getpid()


def test_each_child_gets_its_share_of_the_cores():
    assert side_by_side.child_env(4, cpus=16) == {
        "OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4", "TORCHINDUCTOR_COMPILE_THREADS": "4"}
    assert side_by_side.child_env(4, cpus=2)["OMP_NUM_THREADS"] == "1"


@pytest.mark.parametrize("mode, precompiled", [("smoke", False), ("full", True)])
def test_side_by_side_smoke_skips_the_precompile_phase(tmp_path, monkeypatch, mode, precompiled,
                                                      no_fork_servers):
    """On a GPU a smoke run compiles in its pairs, side by side; a full run precompiles first.
    (Probe, precompile and children faked: only the runner's choice runs.)"""
    root = tmp_path / "chapters"
    write_chapter(root, "ch95", {"_vec_common.py": VEC_COMMON,
                                 "baseline_a.py": vec_pair_file(), "optimized_a.py": vec_pair_file(),
                                 "baseline_b.py": vec_pair_file(), "optimized_b.py": vec_pair_file()})
    calls: list[str] = []
    monkeypatch.setattr(core.runner, "probe", lambda run_dir, **kw: {
        "fingerprint": {"hardware_key": "h100", "device": "cuda"}, "ceilings": {},
        "capability": [9, 0]})
    monkeypatch.setattr(core.runner, "prebuild", lambda pairs, capability: {"files": 0})
    monkeypatch.setattr(side_by_side, "default_jobs", lambda: 3)  # a GPU host's cores
    monkeypatch.setattr(core.runner, "run_precompile", lambda *a, **k: calls.append("precompile"))
    monkeypatch.setattr(core.runner, "run_pair", lambda pair, *a, **k: (
        calls.append(threading.current_thread().name), _ok(pair.id))[1])
    run_suite(select(["ch95"], root), RunOptions(mode=mode, iterations=3, warmup=1, jobs=None,
                                                 output_dir=tmp_path / "runs"))
    assert ("precompile" in calls) == precompiled
    ran_in = [name for name in calls if name != "precompile"]
    assert len(ran_in) == 2, calls  # both pairs ran (an empty list would make all() vacuous)
    assert all(name.startswith("smoke") for name in ran_in) == (mode == "smoke")


def test_full_run_rejects_jobs(tmp_path):
    from typer.testing import CliRunner

    from cli.aisp import app

    result = CliRunner().invoke(app, ["bench", "run", "ch07", "--jobs", "2",
                                      "--output-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "only --mode smoke" in result.output


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
