"""The whole child path: core.runner.run_suite on fake pairs, each pair in a child process.

One suite run (module fixture) covers every outcome, because each child pays for importing
torch: a correct variant, wrong / NaN / seed-insensitive variants, a variant that caches its
first answer across calls, one that writes into its inputs, files that fail to import or to
build a benchmark, benchmarks raising in setup or run, CUDA-only sides, a hanging pair.
(tests/test_planted.py runs the full set of cheats; these few keep the runner-level record,
report, exit code and expectations behaviour covered.) Pairs whose requirements are not met
here are decided by one requirements check (core.precheck), without a child of their own.
"""
from __future__ import annotations

import csv
import json
import os
import re
import textwrap
from pathlib import Path

import pytest

import core.runner
from core import gate as verdict
from core import expectations as expect
from core import precheck, results_csv
from core.discovery import select
from core.events import PairFinished, PairStarted, describe
from core.record import RunRecord
from core.report import render
from core.record import PairResult
from core.runner import RunOptions, run_pair, run_suite
from tests.conftest import (CPU_KEY, GOOD_RUN, VEC_COMMON, cpu_only, vec_chapter_files, vec_pair_file,
                            write_chapter)

pytestmark = cpu_only

HANG_TIMEOUT_S = 6.0  # the hanging pair's own TIMEOUT_S: it hangs within a second of its start
MISSING = "aisp_no_such_module"  # a module no machine has

SEEDED_EXPECTATIONS = {
    "schema": 1, "hardware_key": CPU_KEY,
    "examples": {
        "vec": {"speedup": 2.0, "tolerance": 0.95},  # floor 0.1: the good variant passes
        "vec_wrong": {"speedup": 3.0},               # must survive: vec_wrong fails verification
        "elsewhere": {"speedup": 2.0, "tolerance": 0.3},
    },
}

CH96 = {
    "_vec_common.py": VEC_COMMON,
    "baseline_vec.py": vec_pair_file(),
    "optimized_vec.py": vec_pair_file("return torch.add(*inputs)"),
    "optimized_vec_wrong.py": vec_pair_file("""
        x, y = inputs
        out = x + y
        out[7] += 1.0
        return out
    """),
    "optimized_vec_nan.py": vec_pair_file("""
        x, y = inputs
        out = x + y
        out[3] = float("nan")
        return out
    """),
    # Ignores its inputs: an answer drawn in setup from a fixed seed, with a tolerance loose
    # enough to match the baseline on both verification seeds. The tolerance's bound (by the
    # output's scale, core.verify) refuses it first; the check that each output changes with
    # the input seed stands behind it (the baseline's case: tests/test_child.py).
    "optimized_vec_cached.py": vec_pair_file(
        "return self.cached.clone()",
        attrs="tolerance = Tolerance(rtol=0.0, atol=100.0)",
        setup="gen = torch.Generator().manual_seed(1234)\n"
              "self.cached = torch.randn(N, generator=gen)").replace(
        "import VecBench", "import N, VecBench"),
    # Honest for the verification calls, then replays its first answer on every later call:
    # the timed output, checked after the round on the refilled inputs, differs.
    "optimized_vec_replay.py": vec_pair_file(
        "self.calls = getattr(self, 'calls', 0) + 1\n"
        "if self.calls > 2:\n"
        "    return self.first.clone()\n"
        "x, y = inputs\n"
        "self.first = x + y\n"
        "return self.first.clone()"),
    # Halves its first input on each call (its answer stays right: (x/2)*2 + y), so later
    # calls get smaller numbers: only the input checksum around the call sees it.
    "optimized_vec_mutates.py": vec_pair_file("x, y = inputs\nx.mul_(0.5)\nreturn x * 2 + y"),
    "optimized_vec_setupfail.py": vec_pair_file(setup="raise RuntimeError('setup exploded')"),
    "optimized_vec_runfail.py": vec_pair_file("raise ValueError('run exploded')"),
    "optimized_vec_nogb.py": "import torch\n\nVALUE = 1\n",
    "optimized_vec_badtype.py": vec_pair_file(factory="42"),
    "optimized_vec_cudaonly.py": vec_pair_file(attrs="supports_cpu = False"),
    # a whole pair whose baseline does not even parse
    "baseline_broken.py": "def get_benchmark(:\n    return None\n",
    "optimized_broken.py": vec_pair_file(),
    # a whole pair that needs CUDA
    "baseline_gpu.py": vec_pair_file(attrs="supports_cpu = False"),
    "optimized_gpu.py": vec_pair_file(attrs="supports_cpu = False"),
    # a CPU pair that needs a Python module this machine lacks
    "baseline_nomod.py": vec_pair_file(attrs=f"requires = Requirements(modules=({MISSING!r},))"),
    "optimized_nomod.py": vec_pair_file(),
    # a baseline that raises in run()
    "baseline_basefail.py": vec_pair_file("raise RuntimeError('baseline exploded')"),
    "optimized_basefail.py": vec_pair_file(),
    # a baseline that hangs
    "baseline_hang.py": vec_pair_file("time.sleep(600)\nreturn inputs[0]") + f"\nTIMEOUT_S = {HANG_TIMEOUT_S}\n",
    "optimized_hang.py": vec_pair_file(),
    f"expectations_{CPU_KEY}.json": json.dumps(SEEDED_EXPECTATIONS, indent=2),
}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("suite") / "chapters"
    chapter = write_chapter(root, "ch96", CH96)
    selection = select(["ch96"], root)
    events, children = [], []

    def run_pair_recorded(pair, *args, **kwargs):  # the runner starts a pair's child here
        children.append(pair.id)
        return run_pair(pair, *args, **kwargs)
    options = RunOptions(iterations=3, warmup=1, timeout_s=120,
                         update_expectations=True, output_dir=root.parent / "runs")
    with pytest.MonkeyPatch.context() as patch:  # 3 samples are "noisy": store them anyway here
        patch.setattr(verdict, "MIN_SAMPLES", 1)
        patch.setattr(verdict, "MAX_INTERVAL_RATIO", float("inf"))
        patch.setattr(core.runner, "run_pair", run_pair_recorded)
        # the toy pair's CPU speedup may land below 1x: stored anyway here (that refusal has
        # its own test in test_honest_headlines.py)
        patch.setattr(core.runner, "slower_undeclared", lambda ex: False)
        record = run_suite(selection, options, listener=events.append)
    return {"record": record, "chapter": chapter, "selection": selection, "events": events,
            "children": children, "options": options,
            "rows": {row.name: row for row in record.rows},
            "pairs": {p.pair: p for p in record.pairs}}


def test_selection_order(suite):
    assert [pair.id for pair, _ in suite["selection"]] == [
        "ch96:basefail", "ch96:broken", "ch96:gpu", "ch96:hang", "ch96:nomod", "ch96:vec"]


def test_correct_variant_verifies_and_gets_a_speedup(suite):
    row, pair = suite["rows"]["vec"], suite["pairs"]["ch96:vec"]
    assert row.status == "ok", row.reason
    assert row.measured and row.verification.ok is True
    assert row.speedup > 0
    lo, hi = row.speedup_ci
    assert lo <= hi
    assert row.timing.stats.n == 3 and row.baseline.stats.n == 3
    assert row.baseline is pair.baseline
    assert row.speedup == pytest.approx(row.baseline_ms / row.optimized_ms)
    assert row.timing.rates.bound == "memory" and row.timing.rates.gbps > 0
    assert pair.baseline.rates.gbps > 0
    assert row.file == "ch96/optimized_vec.py" and (row.chapter, row.stem) == ("ch96", "vec")
    assert pair.device == "cpu" and pair.stop_reason == "fixed sample count"
    # two verification seeds, then new input values for every timed call and one timed-output
    # check per side and round; every checked call's seed drawn by the harness and recorded
    integrity = pair.integrity
    assert len(integrity.verify_seeds) == 2 and pair.rounds >= 2
    assert len(integrity.timed_seeds) >= pair.rounds
    sides = [pair.baseline, *(e.timing for e in pair.examples if e.timing)]
    timed_calls = sum(batch.calls for side in sides for batch in side.batches)
    assert integrity.fresh_sets >= timed_calls > 0 and integrity.fresh_s > 0
    assert len(set(integrity.verify_seeds + integrity.timed_seeds)) == \
        len(integrity.verify_seeds) + len(integrity.timed_seeds)
    assert row.verification.checks == 2 + pair.rounds


def test_wrong_output_fails_verification(suite):
    row, pair = suite["rows"]["vec_wrong"], suite["pairs"]["ch96:vec"]
    assert row.status == "failed" and row.speedup is None and row.timing is None
    # the seed is drawn by the harness and named, so the failure can be replayed
    assert row.reason.startswith(f"verification failed on seed {pair.integrity.verify_seeds[0]}")
    assert "worst at (7,)" in row.reason
    assert row.verification.ok is False


def test_nan_output_fails_verification(suite):
    row = suite["rows"]["vec_nan"]
    assert row.status == "failed" and row.speedup is None
    assert "NaN/Inf" in row.reason and row.verification.ok is False


def test_a_tolerance_loose_enough_to_hide_ignored_inputs_is_refused(suite):
    row, pair = suite["rows"]["vec_cached"], suite["pairs"]["ch96:vec"]
    assert row.status == "failed" and row.speedup is None
    first, second = pair.integrity.verify_seeds[:2]
    assert f"on seed {first}" in row.reason and "the declared atol=100" in row.reason
    assert "it would hide missing work" in row.reason and second != first


def test_answer_cached_across_calls_is_caught_by_the_timed_output_check(suite):
    row, pair = suite["rows"]["vec_replay"], suite["pairs"]["ch96:vec"]
    assert row.status == "failed" and row.speedup is None and row.timing is None
    assert "timed output differs from the baseline" in row.reason
    # honest on both verification seeds: the first timed round, on new input values, fails it
    # and the message names the seed of those values
    where = re.search(r"for a timed call of round 1 \(on the values of seed (\d+), new to that call\)", row.reason)
    assert where, row.reason
    assert int(where.group(1)) in pair.integrity.timed_seeds
    assert row.verification.ok is False and row.verification.checks == 3


def test_input_mutation_is_flagged(suite):
    row = suite["rows"]["vec_mutates"]
    assert row.status == "failed" and row.speedup is None
    assert "ch96/optimized_vec_mutates.py" in row.reason
    assert "run() modified its inputs (inputs[0])" in row.reason


@pytest.mark.parametrize("name, fragments", [
    ("vec_setupfail", ["ch96/optimized_vec_setupfail.py", "RuntimeError", "setup exploded"]),
    ("vec_runfail", ["ch96/optimized_vec_runfail.py", "ValueError", "run exploded"]),
    ("vec_nogb", ["ch96/optimized_vec_nogb.py", "defines no get_benchmark()"]),
    ("vec_badtype", ["ch96/optimized_vec_badtype.py", "get_benchmark() returned int",
                     "setup(ctx), make_inputs(seed), run(inputs)"]),
])
def test_broken_variant_fails_with_file_name(suite, name, fragments):
    row = suite["rows"][name]
    assert row.status == "failed" and row.speedup is None
    for fragment in fragments:
        assert fragment in row.reason


def test_cuda_only_variant_is_skipped_with_reason(suite):
    row = suite["rows"]["vec_cudaonly"]
    assert row.status == "skipped"
    assert "ch96/optimized_vec_cudaonly.py" in row.reason and "CUDA" in row.reason


def test_syntax_error_fails_only_that_pair(suite):
    pair = suite["pairs"]["ch96:broken"]
    assert pair.status == "failed"
    row = suite["rows"]["broken"]
    assert row.status == "failed"
    assert "ch96/baseline_broken.py" in row.reason and "SyntaxError" in row.reason
    assert suite["rows"]["vec"].status == "ok"  # same run, other pair measured


def test_cuda_only_pair_is_skipped(suite):
    pair = suite["pairs"]["ch96:gpu"]
    assert pair.status == "skipped"
    row = suite["rows"]["gpu"]
    assert row.status == "skipped"
    assert "ch96/baseline_gpu.py" in row.reason and "needs a CUDA GPU" in row.reason


def test_baseline_raising_fails_the_pair(suite):
    pair = suite["pairs"]["ch96:basefail"]
    assert pair.status == "failed"
    row = suite["rows"]["basefail"]
    assert row.status == "failed"
    assert "ch96/baseline_basefail.py" in row.reason and "baseline exploded" in row.reason


def test_hanging_pair_times_out_and_the_rest_is_measured(suite):
    row = suite["rows"]["hang"]
    assert row.status == "failed"
    assert "timed out" in row.reason
    pair = suite["pairs"]["ch96:hang"]
    assert pair.duration_s >= HANG_TIMEOUT_S * 0.9
    assert suite["rows"]["vec"].status == "ok"  # measured after the hang


def test_results_jsonl_has_one_line_per_pair(suite):
    record = suite["record"]
    lines = (record.run_dir / "results.jsonl").read_text().splitlines()
    assert len(lines) == len(suite["selection"]) == 6
    assert [json.loads(line)["pair"] for line in lines] == [p.id for p, _ in suite["selection"]]
    full = json.loads((record.run_dir / "results.json").read_text())
    assert [p["pair"] for p in full["pairs"]] == [json.loads(line)["pair"] for line in lines]
    assert full["fingerprint"]["hardware_key"] == CPU_KEY
    assert (record.run_dir / "logs" / "ch96__vec.log").exists()
    # the JSON form reads back into the same typed record
    again = RunRecord.from_dict(full)
    assert [(r.id, r.status, r.reason, r.speedup) for r in again.rows] == [
        (r.id, r.status, r.reason, r.speedup) for r in record.rows]
    assert again.pairs[-1].integrity == record.pairs[-1].integrity


def test_results_csv_has_a_row_per_example(suite):
    """results.csv beside results.json: read back with csv.DictReader, the same statuses,
    speedups and reasons as the typed record."""
    record = suite["record"]
    with open(record.run_dir / "results.csv", newline="") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == results_csv.COLUMNS
        rows = list(reader)
    assert [r["example"] for r in rows] == [ex.id for ex in record.rows]
    by_name = {r["variant"]: r for r in rows}
    vec = by_name["vec"]
    assert (vec["pair"], vec["status"], vec["goal"]) == ("ch96:vec", "ok", "speed")
    assert float(vec["speedup"]) == suite["rows"]["vec"].speedup
    lo, hi = suite["rows"]["vec"].speedup_ci
    assert (float(vec["speedup_low"]), float(vec["speedup_high"])) == (lo, hi)
    assert float(vec["baseline_ms"]) == suite["rows"]["vec"].baseline_ms
    assert vec["rate_unit"] == "GB/s" and float(vec["rate"]) > 0
    assert (vec["verification"], vec["expectation"]) == ("match", "pass")
    for name, row in by_name.items():  # every failure and skip carries its reason
        assert row["status"] == suite["rows"][name].status
        assert row["reason"] == suite["rows"][name].reason
        assert (row["status"] == "ok") == bool(row["speedup"])
    assert by_name["vec_wrong"]["status"] == "failed"
    assert "worst at (7,)" in by_name["vec_wrong"]["reason"]
    assert by_name["hang"]["reason"].startswith("timed out after")
    assert by_name["gpu"]["status"] == "skipped" and "needs a CUDA GPU" in by_name["gpu"]["reason"]


def test_exit_code_and_report(suite):
    record = suite["record"]
    assert record.exit_code() == 1  # failed examples
    text = render(record, "table")
    assert "MISMATCH" in text and "SKIPPED" in text and "FAILED" in text
    assert "ch96:vec_wrong" in text and "ch96:vec" in text.split()
    events = suite["events"]
    assert [e.pair for e in events if isinstance(e, PairStarted)] == [
        p.id for p, _ in suite["selection"]]
    finished = [e for e in events if isinstance(e, PairFinished)]
    assert [(e.index, e.total, e.kept) for e in finished] == [(i, 6, False) for i in range(1, 7)]
    assert finished[-1].result is record.pairs[-1]
    lines = [describe(e) for e in events]
    assert "[6/6] ch96:vec ..." in lines
    done = lines[lines.index("[6/6] ch96:vec ...") + 1]
    assert done.strip().startswith("vec: ok, ") and "vec_wrong: failed" in done
    assert "vec_cudaonly: skipped" in done


def test_gate_uses_stored_entry(suite):
    gate = suite["rows"]["vec"].expectation
    assert gate.status == "pass" and gate.stored_speedup == 2.0
    assert suite["rows"]["vec_wrong"].expectation is None


def test_update_expectations_writes_only_verified_examples(suite):
    record, chapter = suite["record"], suite["chapter"]
    assert record.expectation_updates == [f"ch96/expectations_{CPU_KEY}.json"]
    stored = json.loads((chapter / f"expectations_{CPU_KEY}.json").read_text())["examples"]
    assert set(stored) == {"vec", "vec_wrong", "elsewhere"}  # nothing failed/skipped was added
    assert stored["vec_wrong"] == SEEDED_EXPECTATIONS["examples"]["vec_wrong"]  # not overwritten
    assert stored["elsewhere"] == SEEDED_EXPECTATIONS["examples"]["elsewhere"]
    vec = stored["vec"]
    assert vec["speedup"] == round(suite["rows"]["vec"].speedup, 4)
    assert vec["tolerance"] == 0.95  # the hand-set tolerance is kept
    assert vec["samples"] == {"baseline": 3, "optimized": 3}
    assert "date" in vec["provenance"]
    assert sorted(p.name for p in chapter.iterdir() if "expectations" in p.name) == [
        f"expectations_{CPU_KEY}.json"]


def test_an_interrupted_update_stores_the_pairs_that_finished(tmp_path, monkeypatch):
    """Ctrl-C (or `timeout -s INT`) during the second pair of an --update-expectations run:
    the first pair's measured results are stored, the interrupted pair's are not, and the run
    says so; `--resume` would store the rest."""
    root = tmp_path / "chapters"
    chapter = write_chapter(root, "ch95", {"_vec_common.py": VEC_COMMON,
                                           "baseline_first.py": vec_pair_file(),
                                           "optimized_first.py": vec_pair_file("return torch.add(*inputs)"),
                                           "baseline_second.py": vec_pair_file(),
                                           "optimized_second.py": vec_pair_file("return torch.add(*inputs)")})

    def interrupted_on_second(pair, *args, **kwargs):
        if pair.id == "ch95:second":
            raise KeyboardInterrupt
        return run_pair(pair, *args, **kwargs)
    monkeypatch.setattr(verdict, "MIN_SAMPLES", 1)
    monkeypatch.setattr(verdict, "MAX_INTERVAL_RATIO", float("inf"))
    monkeypatch.setattr(core.runner, "slower_undeclared", lambda ex: False)
    monkeypatch.setattr(core.runner, "run_pair", interrupted_on_second)
    events = []
    record = run_suite(select(["ch95"], root), RunOptions(
        iterations=3, warmup=1, timeout_s=120, update_expectations=True,
        output_dir=tmp_path / "runs"), listener=events.append)
    assert record.interrupted and [p.pair for p in record.pairs] == ["ch95:first"]
    stored = json.loads((chapter / f"expectations_{CPU_KEY}.json").read_text())["examples"]
    assert set(stored) == {"first"} and stored["first"]["samples"] == {"baseline": 3, "optimized": 3}
    assert record.expectation_updates[0] == f"ch95/expectations_{CPU_KEY}.json"
    assert any("storing their results (--update-expectations)" in describe(e) for e in events)


# --- requirements decided before the pairs run (core.precheck) ------------------------------

def test_unmet_requirements_are_skipped_without_a_child(suite):
    # only the pairs that can run here got a child; the file that fails to import too
    assert suite["children"] == ["ch96:basefail", "ch96:broken", "ch96:hang", "ch96:vec"]
    gpu, nomod = suite["pairs"]["ch96:gpu"], suite["pairs"]["ch96:nomod"]
    assert gpu.status == nomod.status == "skipped"
    assert nomod.reason == (f"ch96/baseline_nomod.py: needs the Python module '{MISSING}', "
                            f"which is not installed")
    assert [(r.status, r.reason) for r in nomod.examples] == [("skipped", nomod.reason)]
    assert not (suite["record"].run_dir / "logs" / "ch96__gpu.log").exists()
    # reported like any other pair: in results.jsonl, results.json and the progress events
    lines = [json.loads(line) for line in
             (suite["record"].run_dir / "results.jsonl").read_text().splitlines()]
    assert {line["pair"]: line["status"] for line in lines}["ch96:nomod"] == "skipped"
    assert "[5/6] ch96:nomod ..." in [describe(e) for e in suite["events"]]
    # a file that fails to import is still the child's to report, as FAILED
    assert "import failed: SyntaxError" in suite["rows"]["broken"].reason


def test_skip_decided_before_the_run_matches_the_childs(suite, tmp_path):
    """The record of a pair skipped by the requirements check is the one its child writes."""
    pair, examples = next((p, e) for p, e in suite["selection"] if p.id == "ch96:gpu")
    (tmp_path / "logs").mkdir()
    from_child = run_pair(pair, examples, suite["options"], tmp_path).to_dict()
    from_check = PairResult.from_dict(suite["pairs"]["ch96:gpu"].to_dict())
    from_check.examples[0].chapter = from_check.examples[0].stem = ""  # added by annotate()
    from_check = from_check.to_dict()
    from_child.pop("duration_s"), from_check.pop("duration_s")
    assert from_check == from_child


TAMPER = textwrap.dedent("""
    import time

    from core.benchmark import Benchmark

    time.perf_counter = lambda: 0.0  # an import-time patch of the clock

    class Bench(Benchmark):
        supports_cpu = False

    get_benchmark = Bench
""")


def test_requirements_check_stops_at_a_tampering_import(tmp_path):
    """A pair file that patches the clock when imported ends the check (pairs it decided
    before stay decided); the rest, the tamperer included, go to their own children. The
    patch never reaches this process."""
    root = tmp_path / "chapters"
    write_chapter(root, "ch97", {
        "_vec_common.py": VEC_COMMON,
        "baseline_a.py": vec_pair_file(attrs="supports_cpu = False"),
        "optimized_a.py": vec_pair_file(),
        "baseline_b.py": TAMPER, "optimized_b.py": TAMPER,
        "baseline_c.py": vec_pair_file(attrs="supports_cpu = False"),
        "optimized_c.py": vec_pair_file(),
    })
    (tmp_path / "logs").mkdir()
    clock = __import__("time").perf_counter
    found = precheck.check(select(["ch97"], root), tmp_path, timeout_s=60)
    assert list(found.skipped) == ["ch97:a"]
    assert found.skipped["ch97:a"].reason.startswith("ch97/baseline_a.py: needs a CUDA GPU")
    assert "replaced harness or timing functions" in found.problem
    assert __import__("time").perf_counter is clock
    assert "time.perf_counter" in (tmp_path / "logs" / "requirements.log").read_text()


def test_resume_keeps_skips_and_checks_only_the_rest(tmp_path, monkeypatch):
    """--resume: a skip in results.jsonl is kept; the requirements check sees only the pairs
    still to run. (The probe and the pairs' children are faked: only the check runs.)"""
    root = tmp_path / "chapters"
    write_chapter(root, "ch97", {
        "_vec_common.py": VEC_COMMON,
        "baseline_a.py": vec_pair_file(attrs="supports_cpu = False"),
        "optimized_a.py": vec_pair_file(),
        "baseline_b.py": vec_pair_file(attrs=f"requires = Requirements(modules=({MISSING!r},))"),
        "optimized_b.py": vec_pair_file(),
        "baseline_c.py": vec_pair_file(), "optimized_c.py": vec_pair_file(),
    })
    selection = select(["ch97"], root)
    options = RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs")
    run_dir = tmp_path / "runs" / "earlier"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps(core.runner.run_choices(selection, options)))
    kept = PairResult(pair="ch97:a", device="cpu").fail_all("ch97/baseline_a.py: kept", "skipped")
    (run_dir / "results.jsonl").write_text(json.dumps(kept.to_dict()) + "\n")
    checked, children = [], []
    real_check = precheck.check
    monkeypatch.setattr(core.runner, "probe", lambda run_dir, **kw: {
        "fingerprint": {"hardware_key": CPU_KEY, "device": "cpu"}, "ceilings": {}})
    monkeypatch.setattr(precheck, "check", lambda pending, *a: (
        checked.extend(p.id for p, _ in pending), real_check(pending, *a))[1])
    monkeypatch.setattr(core.runner, "run_pair", lambda pair, *a, **k: (
        children.append(pair.id), PairResult(pair=pair.id, device="cpu").fail_all("faked"))[1])
    options.resume = run_dir
    record = run_suite(selection, options)
    assert checked == ["ch97:b", "ch97:c"] and children == ["ch97:c"]
    assert [(p.pair, p.status, p.reason) for p in record.pairs] == [
        ("ch97:a", "skipped", "ch97/baseline_a.py: kept"),
        ("ch97:b", "skipped", f"ch97/baseline_b.py: needs the Python module '{MISSING}', "
                              f"which is not installed"),
        ("ch97:c", "failed", "faked")]
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["pair"] for line in lines] == ["ch97:a", "ch97:b", "ch97:c"]


# --- --mode smoke ----------------------------------------------------------------------------

def test_smoke_mode_verifies_but_neither_gates_nor_stores(make_chapter, fake_root, tmp_path):
    from core.runner import SMOKE_GATE

    chapter = make_chapter("ch93", vec_chapter_files(
        default=vec_pair_file(GOOD_RUN),
        broken=vec_pair_file("x, y = inputs\nreturn x - y"),
        seesmode=vec_pair_file(GOOD_RUN, setup="assert self.ctx.smoke and self.ctx.mode == 'smoke'")))
    # a stored speedup this tiny CPU pair cannot reach: a full run would call it a regression
    (chapter / f"expectations_{CPU_KEY}.json").write_text(json.dumps(
        {"schema": 1, "hardware_key": CPU_KEY, "examples": {"vec": {"speedup": 50.0}}}))
    options = RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs", mode="smoke")
    record = run_suite(select(["ch93"], root=fake_root), options)
    rows = {ex.name: ex for ex in record.rows}
    assert rows["vec"].status == "ok" and rows["vec"].expectation == SMOKE_GATE
    assert rows["vec_seesmode"].status == "ok"  # the pair's setup saw BenchContext.smoke
    assert rows["vec_broken"].status == "failed"  # verification still counts
    assert record.exit_code() == 1
    assert json.loads((record.run_dir / "run.json").read_text())["mode"] == "smoke"
    assert "smoke run" in render(record)
    # the run's wall time and each pair's are kept, and the table ends with where it went
    assert json.loads((record.run_dir / "results.json").read_text())["wall_s"] == record.wall_s > 0
    assert sum(p.duration_s for p in record.pairs) <= record.wall_s + 0.05  # wall_s: to 0.1 s
    assert "time: " in render(record) and "slowest: ch93:" in render(record)
    full = run_suite(select(["ch93:vec"], root=fake_root),
                     RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs"))
    assert full.rows[0].expectation.status == "regression"  # the same pair, gated in full mode


def test_smoke_mode_refuses_to_store(make_chapter, tmp_path, monkeypatch, fake_root):
    from typer.testing import CliRunner

    from cli.aisp import app

    monkeypatch.setenv("AISP_ROOT", str(fake_root))
    make_chapter("ch93", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    result = CliRunner().invoke(app, ["bench", "run", "ch93", "--mode", "smoke",
                                      "--update-expectations", "--output-dir", str(tmp_path)])
    assert result.exit_code == 2 and "--mode smoke measures too little to store" in result.output


# --- the fork server (core.forkserver) -----------------------------------------------------------

# Each side's setup records the process it runs in; a module-level patch by one pair must not
# reach the next pair's process.
RECORDS_PROCESS = vec_pair_file(GOOD_RUN, setup=(
    "import os, json, core.timing\n"
    "seen = core.timing.__dict__.setdefault('PAIRS_SEEN', set())  # a module-level patch\n"
    "stem = __name__.rsplit('_', 1)[-1]\n"
    "assert not seen - {stem}, f'state from pair {seen - {stem}} leaked in'\n"
    "seen.add(stem)\n"
    "with open(os.environ['AISP_TEST_PIDS'], 'a') as f:\n"
    "    f.write(json.dumps([os.getpid(), os.getppid(), os.getpgid(0), os.getsid(0)]) + '\\n')"))


@pytest.mark.parametrize("fork", ["1", "0"])
def test_each_pair_gets_a_fresh_process_of_its_own_with_or_without_the_fork_server(
        make_chapter, fake_root, tmp_path, monkeypatch, fork):
    pids = tmp_path / "pids.jsonl"
    monkeypatch.setenv("AISP_TEST_PIDS", str(pids))
    monkeypatch.setenv("AISP_FORK_SERVER", fork)
    files = {"_vec_common.py": VEC_COMMON}
    for stem in ("one", "two"):
        files[f"baseline_{stem}.py"] = files[f"optimized_{stem}.py"] = RECORDS_PROCESS
    make_chapter("ch93", files)
    record = run_suite(select(["ch93"], root=fake_root),
                       RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs"))
    assert [ex.status for ex in record.rows] == ["ok", "ok"], [ex.reason for ex in record.rows]
    seen = [json.loads(line) for line in pids.read_text().splitlines()]
    by_pair = {}
    for pid, ppid, pgid, sid in seen:
        assert pgid == pid and sid == pid  # its own session and process group, killed as one
        by_pair.setdefault(pid, ppid)
    assert len(by_pair) == 2  # one process per pair, both sides in it
    parents = set(by_pair.values())
    if fork == "1":  # forked by one server, not started by the runner
        assert len(parents) == 1 and os.getpid() not in parents
    else:
        assert parents == {os.getpid()}


@pytest.mark.own_fork_server
def test_a_fork_server_that_cannot_start_leaves_fresh_processes(make_chapter, fake_root, tmp_path,
                                                                monkeypatch):
    from core import forkserver

    def broken(self, *args, **kwargs):
        raise forkserver.ForkServerError("it did not start (test)")

    monkeypatch.setattr(forkserver.ForkServer, "__init__", broken)
    make_chapter("ch93", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    record = run_suite(select(["ch93"], root=fake_root),
                       RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs"))
    assert record.rows[0].status == "ok"


@pytest.mark.parametrize("compiles", [False, True])
def test_the_fork_server_preloads_the_compiler_only_for_a_run_that_compiles(
        compiles, fake_root, make_chapter, tmp_path, monkeypatch):
    """Importing dynamo, AOT autograd, Flex and Triton in the server costs ~2 s of a CPU at
    every run; it pays only where a pair's side compiles (core.precompile.COMPILES)."""
    from contextlib import contextmanager

    asked = []

    @contextmanager
    def recording_server(env=None, preload=True):
        asked.append(preload)
        yield
    monkeypatch.setattr(core.runner, "fork_server", recording_server)
    body = "x, y = inputs\nreturn x + y" + ("  # torch.compile(...) would go here" if compiles else "")
    make_chapter("ch95", vec_chapter_files(default=vec_pair_file(body)))
    run_suite(select(["ch95"], fake_root), RunOptions(iterations=2, warmup=1,
                                                      output_dir=tmp_path / "runs"))
    assert asked == [compiles]


def test_a_relative_output_dir_is_the_callers_not_the_repositorys(make_chapter, fake_root, tmp_path,
                                                                  monkeypatch):
    make_chapter("ch93", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # `cd /tmp/x && aisp bench run ch02 --output-dir runs`
    record = run_suite(select(["ch93"], root=fake_root),
                       RunOptions(iterations=2, warmup=1, output_dir=Path("runs")))
    assert record.run_dir.is_absolute() and record.run_dir.parent == elsewhere / "runs"
    assert record.rows[0].status == "ok", record.rows[0].reason  # the probe found its file
    assert (record.run_dir / "results.json").exists()
