"""Goal "compile_time" (core.compile_time): cold starts in fresh processes, on CPU.

The fake sides stand in for a compiler: their setup() spins the CPU for a set time unless a
"compiled artifact" already exists. The honest side keeps it where torch.compile keeps its
cache (TORCHINDUCTOR_CACHE_DIR), which the harness makes empty for every cold start; the
planted one keeps it in a fixed place, so its later cold starts are warm; another compiles
fast but runs slower in the steady state.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from core import compile_time, goals
from core import expectations as expect
from core import gate as verdict
from core.compile_time import ColdStart, persisted_problem, ratio_interval
from core.discovery import select
from core.report import notes, row
from core.runner import RunOptions, expectation_entry, run_suite
from core.hardware import fingerprint
from tests.conftest import VEC_COMMON, vec_pair_file, write_chapter

SPIN = '''
def spin(seconds):  # CPU work standing in for a compiler (no sleeping)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
'''


def compiling_side(seconds: float, cache_dir: str, run: str = "x, y = inputs\nreturn x + y") -> str:
    """A side whose setup() 'compiles' for `seconds` unless `cache_dir`/artifact exists."""
    source = vec_pair_file(run, attrs='goal = "compile_time"', setup=f"""
        import os
        from pathlib import Path
        artifact = Path({cache_dir}) / "artifact"
        if not artifact.exists():
            spin({seconds})
            artifact.parent.mkdir(parents=True, exist_ok=True)
            artifact.write_text("compiled")
        """)
    return source.replace("class Bench(VecBench):", SPIN + "\n\nclass Bench(VecBench):")


INDUCTOR_CACHE = 'os.environ["TORCHINDUCTOR_CACHE_DIR"]'


def warm_user_cache(patch, folder: Path) -> None:
    """Where an honest side keeps its artifact is TORCHINDUCTOR_CACHE_DIR, which the harness
    makes empty for each cold start; in the pair's own run it is the user's cache. Point that
    at a test-local folder, already compiled: the pair run's setup() is then never slower
    than a cold start however loaded the machine, and nothing lands in the real cache (torch
    sets the variable to /tmp/torchinductor_<user> when unset, where the artifact was left)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "artifact").write_text("compiled")
    patch.setenv("TORCHINDUCTOR_CACHE_DIR", str(folder))


# The fake compile times: the baseline's 1.5 s against the honest sides' 0.3 s. A cold start
# is timed from process start, so the imports (seconds on a busy 2-core machine, varying
# between starts) are in every side's total: the 1.2 s the spin saves must stand well above
# that variation for the ratio to favour the honest side. The persisted-cache rule compares
# setup + first call only (ColdStart.work_s), where scheduling overhead is small.
BASELINE_S, HONEST_S = 1.5, 0.3


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    root = tmp_path_factory.mktemp("cold") / "chapters"
    own_cache = repr(str(root.parent / "planted-cache"))  # outside the fresh folders
    baseline = vec_pair_file(setup=f"spin({BASELINE_S})").replace(
        "class Bench(VecBench):", SPIN + "\n\nclass Bench(VecBench):")
    write_chapter(root, "ch93", {
        "_vec_common.py": VEC_COMMON,
        "baseline_vec.py": baseline,
        "optimized_vec.py": compiling_side(HONEST_S, INDUCTOR_CACHE),  # honest: 3x faster cold start
        "optimized_vec_own_cache.py": compiling_side(BASELINE_S, own_cache),  # planted: warm after one
        "optimized_vec_slow_steady.py": compiling_side(
            HONEST_S, INDUCTOR_CACHE, run="spin(0.002)\nx, y = inputs\nreturn x + y"),
        # planted: compiles at import time, which a cold start from setup() would not see
        "optimized_vec_import_work.py": compiling_side(HONEST_S, INDUCTOR_CACHE).replace(
            "\n\nclass Bench(VecBench):", "\n\nspin(0.8)\n\n\nclass Bench(VecBench):"),
        # planted: right in its pair's own process, wrong in a fresh one (the cold start's
        # first answer is compared with the baseline's)
        "optimized_vec_cold_wrong.py": compiling_side(HONEST_S, INDUCTOR_CACHE, run=(
            "import os\nx, y = inputs\nreturn x - y if os.environ.get('AISP_SPAWNED_AT') else x + y")),
    })
    options = RunOptions(iterations=3, warmup=1, timeout_s=120, output_dir=root.parent / "runs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(verdict, "MIN_SAMPLES", 1)
        patch.setattr(verdict, "MAX_INTERVAL_RATIO", float("inf"))
        patch.setattr(compile_time, "COLD_STARTS", 2)
        warm_user_cache(patch, root.parent / "user-inductor-cache")
        record = run_suite(select(["ch93"], root), options)
    return {ex.name: ex for ex in record.rows}


def test_cold_start_is_gated_and_reported(cold):
    ex = cold["vec"]
    assert ex.status == "ok", ex.reason
    assert len(ex.baseline.cold_starts) == 2 and len(ex.timing.cold_starts) == 2
    assert all(s.setup_s > BASELINE_S - 0.05 for s in ex.baseline.cold_starts)  # the spin, in setup
    assert all(s.setup_s < BASELINE_S - 0.5 for s in ex.timing.cold_starts)
    # from process start: imports are in every cold start, and the ratio is of the totals
    assert all(s.import_s > 0.1 for s in ex.baseline.cold_starts + ex.timing.cold_starts)
    assert goals.goal_of("compile_time").ratio(ex) == pytest.approx(
        compile_time.median_s(ex.baseline.cold_starts) / compile_time.median_s(ex.timing.cold_starts))
    assert goals.goal_of("compile_time").ratio(ex) > 1.0
    assert ex.expectation.status == "new"
    assert "faster cold start; time" in row(ex)[3]
    assert any(line.startswith("COMPILE TIME ch93:vec (goal compile_time") for line in notes([ex]))
    entry = expectation_entry(ex, fingerprint())
    assert entry["goal"] == "compile_time" and entry["compile_ratio"] == pytest.approx(
        goals.goal_of("compile_time").ratio(ex), rel=1e-3)
    assert entry["baseline_cold_start_s"] > entry["optimized_cold_start_s"]


def test_a_cache_kept_outside_the_fresh_directories_is_caught(cold):
    ex = cold["vec_own_cache"]
    assert ex.status == "failed"
    assert "something it keeps between processes" in ex.reason


def test_work_moved_to_import_time_is_in_the_cold_start(cold):
    moved = cold["vec_import_work"]
    assert moved.status == "ok", moved.reason
    for start in moved.timing.cold_starts:  # the 0.8 s spin at import, counted, not in setup
        assert start.import_s > 0.8 and start.setup_s < 0.8
        assert start.total_s == pytest.approx(start.import_s + start.setup_s + start.first_call_s)
    # (not compared with the honest side's total: a busy host's imports vary by more than 0.8 s)


def test_a_cold_start_whose_first_answer_is_wrong_fails(cold):
    ex = cold["vec_cold_wrong"]
    assert ex.status == "failed"
    assert "first answer in cold start" in ex.reason and "differs from the baseline" in ex.reason


def test_a_faster_compile_that_runs_slower_is_a_regression(cold):
    ex = cold["vec_slow_steady"]
    assert ex.status == "ok", ex.reason
    assert goals.goal_of("compile_time").ratio(ex) > 1.0
    assert ex.expectation.status == "regression"
    assert "costs run time" in ex.expectation.message


def test_stored_compile_ratio_gates_later_runs():
    from tests.test_honest_headlines import pair_result, side

    def compile_gate(ex, entry):
        return goals.goal_of("compile_time").gate(ex, entry, result)

    result = pair_result(side(1.0), side(1.0), (0.99, 1.01))
    ex = result.examples[0]
    ex.goal = "compile_time"
    ex.baseline = result.baseline
    ex.baseline.cold_starts = [ColdStart(9.0, 1.0)] * 3
    ex.timing.cold_starts = [ColdStart(4.0, 1.0)] * 3  # 2x faster; stored 3x: floor 2.25x
    gate = compile_gate(ex, {"speedup": 1.0, "goal": "compile_time", "compile_ratio": 3.0})
    assert gate.status == "regression" and gate.message.startswith("cold start 2.00x")
    gate = compile_gate(ex, {"speedup": 1.0, "goal": "compile_time", "compile_ratio": 2.4})
    assert gate.status == "pass"


def test_entries_with_goal_compile_time_need_their_ratio(tmp_path):
    path = tmp_path / "expectations_h100.json"
    path.write_text('{"examples": {"x": {"speedup": 1.0, "goal": "compile_time"}}}')
    with pytest.raises(expect.ExpectationsError, match="compile_ratio"):
        expect.load(path)


def test_persisted_and_interval_helpers():
    fast, slow = ColdStart(1.0, 0.1), ColdStart(3.0, 0.1)
    assert persisted_problem([slow, fast, fast]) is not None
    assert persisted_problem([fast, slow, fast]) is None  # a slow later start is noise, not a cache
    assert persisted_problem([fast, fast], run_setup_s=3.0) is not None  # the pair run was colder
    assert persisted_problem([slow, slow], run_setup_s=3.0) is None
    assert ratio_interval([slow, slow], [fast, slow]) == pytest.approx((1.0, 3.1 / 1.1))


def test_measure_stops_when_enough_says_the_verdict_is_known():
    from core.compile_time import measure, ratio_bounds

    started = []

    def start(side, env):
        started.append(side)
        return ColdStart(3.0, 0.0) if side == "baseline" else ColdStart(1.0, 0.0)

    def clears(floor):
        return lambda found: ((b := ratio_bounds(found["baseline"], found["fast"], 3)) is not None
                              and b[0] >= floor)

    assert [len(v) for v in measure(["baseline", "fast"], start, 3, clears(2.0)).values()] == [2, 2]
    assert [len(v) for v in measure(["baseline", "fast"], start, 3, clears(4.0)).values()] == [3, 3]
    assert ratio_bounds([ColdStart(3.0, 0.0)], [ColdStart(1.0, 0.0)], 3) is None  # one is no bound
