"""The precompile phase (core.precompile): which sides it compiles first, and how it runs them."""
from __future__ import annotations

import time

from core import precompile
from core.discovery import select
from core.runner import RunOptions, run_suite
from tests.conftest import VEC_COMMON, vec_pair_file

COMPILED = vec_pair_file(setup="self.add = torch.compile(lambda x, y: x + y)",
                         run="x, y = inputs\nreturn self.add(x, y)")
# What the runner reads is the source (core.precompile.COMPILES): a side that runs Dynamo
# without Inductor is picked as a compiling side all the same, and its child does not
# spend ~10 s of a loaded CPU in the C++ compiler for each run of it.
COMPILED_EAGER = COMPILED.replace("torch.compile(lambda x, y: x + y)",
                                  "torch.compile(lambda x, y: x + y, backend='eager')")


def test_it_picks_the_sides_that_compile_even_through_a_shared_module(make_chapter, fake_root):
    make_chapter("ch95", {
        "_vec_common.py": VEC_COMMON,
        "_compiled_common.py": "import torch\nADD = lambda f: torch.compile(f)\n",
        "baseline_vec.py": vec_pair_file(),  # plain eager: nothing to compile
        "optimized_vec.py": COMPILED,
        "optimized_vec_shared.py": "from ._compiled_common import ADD\n" + vec_pair_file(),
        "optimized_vec_tuned.py": COMPILED.replace("torch.compile(lambda x, y: x + y)",
                                                   "torch.compile(lambda x, y: x + y, mode='max-autotune')"),
    })
    make_chapter("ch96", {  # compile_time: its cold starts use empty caches of their own
        "_vec_common.py": VEC_COMMON, "baseline_vec.py": COMPILED,
        "optimized_vec.py": vec_pair_file(attrs="goal = 'compile_time'"),
    })
    make_chapter("ch97", {  # runs as two ranks: left alone
        "_vec_common.py": VEC_COMMON, "optimized_vec.py": COMPILED,
        "baseline_vec.py": vec_pair_file(attrs="requires = Requirements(gpus=2)"),
    })
    jobs = precompile.jobs_for(select(["ch95", "ch96", "ch97"], root=fake_root))
    assert [(j.pair.id, j.side) for j in jobs] == [("ch95:vec", "vec"), ("ch95:vec", "vec_shared"),
                                                   ("ch96:vec", "baseline")]
    # a smoke run keeps no timing: the autotuned side is precompiled too, the rest unchanged
    smoke = precompile.jobs_for(select(["ch95", "ch96", "ch97"], root=fake_root), smoke=True)
    assert [j.side for j in smoke] == ["vec", "vec_shared", "vec_tuned", "baseline"]


def test_each_side_compiles_in_a_process_of_its_own_and_failures_are_listed(
        make_chapter, fake_root, tmp_path, monkeypatch):
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("AISP_TEST_MARKS", str(marks))
    mark = "import os\nopen(os.path.join(os.environ['AISP_TEST_MARKS'], str(os.getpid())), 'w').close()"
    make_chapter("ch95", {
        "_vec_common.py": VEC_COMMON,
        "baseline_vec.py": vec_pair_file(setup=mark),
        "optimized_vec.py": vec_pair_file(setup=mark),
        "optimized_vec_broken.py": vec_pair_file(setup="raise RuntimeError('no compiler here')"),
        "optimized_vec_stuck.py": vec_pair_file(setup="time.sleep(120)"),
    })
    (pair, examples), = select(["ch95"], root=fake_root)
    jobs = [precompile.Job(pair, side) for side in ("baseline", "vec", "vec_broken", "vec_stuck")]
    spec = tmp_path / "spec.json"
    spec.write_text(__import__("json").dumps({
        "pair": pair.id, "baseline": str(pair.baseline), "seed": 0,
        "examples": [{"name": e.name, "id": e.id, "path": str(e.optimized)} for e in examples]}))
    logs = tmp_path / "logs"
    logs.mkdir()
    started = time.perf_counter()
    seen = []
    done = precompile.precompile(jobs, lambda p: spec, logs, parallel=2, timeout_s=20,
                                 progress=lambda finished, total: seen.append((finished, total)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]  # once per side, as each ends
    assert time.perf_counter() - started < 90  # the stuck side was killed at its timeout
    assert (done.sides, done.parallel) == (4, 2)
    assert len(list(marks.iterdir())) == 2  # baseline and vec: two processes
    assert done.failed == ["ch95:vec/vec_broken: failed, see logs/ch95_vec.vec_broken.precompile.log",
                           "ch95:vec/vec_stuck: timed out, see logs/ch95_vec.vec_stuck.precompile.log"]
    assert "no compiler here" in (logs / "ch95_vec.vec_broken.precompile.json").read_text()
    # every side's wall time is kept, the stuck one's up to its timeout
    assert set(done.side_seconds) == {f"ch95:vec/{side}" for side in
                                      ("baseline", "vec", "vec_broken", "vec_stuck")}
    assert done.slowest(1)[0][0] == "ch95:vec/vec_stuck"
    assert 20 <= done.side_seconds["ch95:vec/vec_stuck"] < 90
    assert done.to_dict()["side_seconds"] == done.side_seconds


def test_the_run_precompiles_only_where_it_compiles_for_a_gpu_and_not_when_told_not_to(
        make_chapter, fake_root, tmp_path, monkeypatch):
    import core.runner

    make_chapter("ch95", {"_vec_common.py": VEC_COMMON, "baseline_vec.py": vec_pair_file(),
                          "optimized_vec.py": COMPILED_EAGER})
    calls = []

    def fake(jobs, spec_for, logs, parallel=None, timeout_s=0, progress=None):
        calls.append([(j.pair.id, j.side, spec_for(j.pair).exists()) for j in jobs])
        progress(0, len(jobs))  # a side ended; with others left, the run says how far it is
        return precompile.PrecompileRecord(sides=len(jobs), seconds=0.5, parallel=parallel,
                                           side_seconds={"ch95:vec/vec": 0.4})
    monkeypatch.setattr(precompile, "precompile", fake)
    monkeypatch.setattr(core.runner, "PRECOMPILE_NOTE_S", 0.0)
    selection = select(["ch95"], root=fake_root)
    options = RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs")
    record = run_suite(selection, options)  # a CPU run: no GPU to compile for
    assert calls == [] and record.precompile == {}
    real_probe = core.runner.probe
    monkeypatch.setattr(core.runner, "probe", lambda run_dir, **kw: {**real_probe(run_dir, **kw), "capability": [9, 0]})
    monkeypatch.setattr(core.runner, "prebuild", lambda pairs, capability: {"files": 0})
    notes = []
    record = run_suite(selection, options, listener=lambda event: notes.append(getattr(event, "text", "")))
    assert calls == [[("ch95:vec", "vec", True)]]  # its spec is written before it compiles
    assert "  precompiled 0 of 1 sides (0 s)" in notes
    assert "precompiled 1 of 1 sides in 0 s (longest: ch95:vec/vec 0 s)" in notes
    assert record.precompile["sides"] == 1
    assert [ex.status for ex in record.rows] == ["ok"]
    calls.clear()
    run_suite(selection, RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs",
                                    precompile=False))
    assert calls == []


def test_a_side_this_machine_cannot_run_is_not_warmed(make_chapter, fake_root, in_process_root):
    """The precompile phase cold-starts sides before the pairs run; a variant whose own
    requirements this machine lacks (a Blackwell variant on a Hopper; here a GPU-only one
    on the CPU) is reported skipped, not set up and called."""
    from core.runner import pair_spec
    from core.toolchild import cold_start

    make_chapter("ch93", {"_vec_common.py": VEC_COMMON, "baseline_vec.py": vec_pair_file(),
                          "optimized_vec_gpu.py": vec_pair_file(
                              "raise AssertionError('set up and called')",
                              attrs="supports_cpu = False")})
    [(pair, examples)] = select(["ch93"], root=fake_root)
    spec = pair_spec(pair, examples, RunOptions())
    assert cold_start(spec, "vec_gpu", 1, None) == {"skipped": "needs a CUDA GPU; none is available on this machine"}
    assert "error" not in cold_start(spec, "baseline", 1, None)
