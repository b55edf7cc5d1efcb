"""The whole child path: core.runner.run_suite on fake pairs, each pair in a child process.

One suite run (module fixture) covers every outcome, because each child pays for importing
torch: a correct variant, wrong / NaN / cached variants, files that fail to import or to
build a benchmark, benchmarks raising in setup or run, CUDA-only sides, a hanging pair.
"""
from __future__ import annotations

import json

import pytest

from core.discovery import select
from core.runner import RunOptions, run_suite
from tests.conftest import VEC_COMMON, cpu_only, vec_pair_file, write_chapter

pytestmark = cpu_only

HANG_TIMEOUT_S = 12.0

SEEDED_EXPECTATIONS = {
    "schema": 1, "hardware_key": "cpu",
    "examples": {
        "vec": {"speedup": 1.0, "tolerance": 0.9},   # floor 0.1: the good variant passes
        "vec_wrong": {"speedup": 3.0},               # must survive: vec_wrong fails verification
        "elsewhere": {"speedup": 2.0, "tolerance": 0.3},
    },
}

CH96 = {
    "_vec_common.py": VEC_COMMON,
    "baseline_vec.py": vec_pair_file(),
    "optimized_vec.py": vec_pair_file("return torch.add(self.x, self.y)"),
    "optimized_vec_wrong.py": vec_pair_file("""
        out = self.x + self.y
        out[7] += 1.0
        return out
    """),
    "optimized_vec_nan.py": vec_pair_file("""
        out = self.x + self.y
        out[3] = float("nan")
        return out
    """),
    # Computed once in setup from a fixed seed: matches the baseline within its (loose)
    # tolerance on both seeds, so only the second-seed check can catch it.
    "optimized_vec_cached.py": vec_pair_file(
        "return self.cached.clone()",
        attrs="tolerance = Tolerance(rtol=0.0, atol=100.0)",
        setup="gen = torch.Generator().manual_seed(1234)\n"
              "self.cached = torch.randn(self.x.shape, generator=gen)"),
    # The setup-time buffer itself, returned unwritten: caught before any comparison.
    "optimized_vec_stale.py": vec_pair_file(
        "return self.cached",
        setup="self.cached = self.x + self.y"),
    # Halves its input each call, so later calls get smaller numbers.
    "optimized_vec_mutates.py": vec_pair_file("self.x.mul_(0.5)\nreturn self.x * 2 + self.y"),
    # Honest for the first calls after setup (verification), then replays its first
    # result: only the re-verification on fresh inputs between timing rounds sees it.
    "optimized_vec_replay.py": vec_pair_file(
        "type(self).calls = getattr(type(self), 'calls', 0) + 1\n"
        "if type(self).calls > 2:\n"
        "    return type(self).first.clone()\n"
        "out = self.x + self.y\n"
        "type(self).first = out.clone()\n"
        "return out"),
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
    # a baseline that raises in run()
    "baseline_basefail.py": vec_pair_file("raise RuntimeError('baseline exploded')"),
    "optimized_basefail.py": vec_pair_file(),
    # a baseline that hangs
    "baseline_hang.py": vec_pair_file("time.sleep(600)\nreturn self.x"),
    "optimized_hang.py": vec_pair_file(),
    "expectations_cpu.json": json.dumps(SEEDED_EXPECTATIONS, indent=2),
}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("suite") / "chapters"
    chapter = write_chapter(root, "ch96", CH96)
    selection = select(["ch96"], root)
    lines = []
    options = RunOptions(iterations=3, warmup=1, timeout_s=HANG_TIMEOUT_S,
                         update_expectations=True, output_dir=root.parent / "runs")
    result = run_suite(selection, options, progress=lines.append)
    return {"result": result, "chapter": chapter, "selection": selection, "progress": lines,
            "rows": {row["name"]: row for row in result.rows},
            "pairs": {p["pair"]: p for p in result.pairs}}


def test_selection_order(suite):
    assert [pair.id for pair, _ in suite["selection"]] == [
        "ch96:basefail", "ch96:broken", "ch96:gpu", "ch96:hang", "ch96:vec"]


def test_correct_variant_verifies_and_gets_a_speedup(suite):
    row = suite["rows"]["vec"]
    assert row["status"] == "ok", row.get("reason")
    assert row["verification"]["ok"] is True
    assert row["speedup"] > 0
    lo, hi = row["speedup_ci"]
    assert lo <= hi
    assert row["stats"]["n"] == 3 and row["baseline_samples"] == 3
    assert row["speedup"] == pytest.approx(row["baseline_ms"] / row["optimized_ms"])
    assert row["rates"]["bound"] == "memory" and row["rates"]["gbps"] > 0
    assert row["file"] == "ch96/optimized_vec.py"
    pair = suite["pairs"]["ch96:vec"]
    assert pair["device"] == "cpu" and pair["stop_reason"] == "fixed sample count"


def test_wrong_output_fails_verification(suite):
    row = suite["rows"]["vec_wrong"]
    assert row["status"] == "failed" and "speedup" not in row
    assert row["reason"].startswith("verification failed")
    assert "worst at (7,)" in row["reason"]
    assert row["verification"]["ok"] is False


def test_nan_output_fails_verification(suite):
    row = suite["rows"]["vec_nan"]
    assert row["status"] == "failed" and "speedup" not in row
    assert "NaN/Inf" in row["reason"]


def test_cached_output_caught_by_second_seed(suite):
    row = suite["rows"]["vec_cached"]
    assert row["status"] == "failed" and "speedup" not in row
    assert "identical for seeds 0 and 1" in row["reason"]
    assert row["verification"]["ok"] is False


def test_stale_setup_buffer_is_flagged(suite):
    row = suite["rows"]["vec_stale"]
    assert row["status"] == "failed" and "speedup" not in row
    assert "ch96/optimized_vec_stale.py" in row["reason"]
    assert "`cached`, a buffer filled in setup()" in row["reason"]


def test_input_mutation_is_flagged(suite):
    row = suite["rows"]["vec_mutates"]
    assert row["status"] == "failed" and "speedup" not in row
    assert "run() modified its inputs (x)" in row["reason"]


def test_replayed_result_caught_by_reverification_during_timing(suite):
    row = suite["rows"]["vec_replay"]
    assert row["status"] == "failed" and "speedup" not in row
    assert "on fresh inputs after timing round" in row["reason"]


@pytest.mark.parametrize("name, fragments", [
    ("vec_setupfail", ["ch96/optimized_vec_setupfail.py", "RuntimeError", "setup exploded"]),
    ("vec_runfail", ["ch96/optimized_vec_runfail.py", "ValueError", "run exploded"]),
    ("vec_nogb", ["ch96/optimized_vec_nogb.py", "defines no get_benchmark()"]),
    ("vec_badtype", ["ch96/optimized_vec_badtype.py", "get_benchmark() returned int",
                     "setup, run, workload"]),
])
def test_broken_variant_fails_with_file_name(suite, name, fragments):
    row = suite["rows"][name]
    assert row["status"] == "failed" and "speedup" not in row
    for fragment in fragments:
        assert fragment in row["reason"]


def test_cuda_only_variant_is_skipped_with_reason(suite):
    row = suite["rows"]["vec_cudaonly"]
    assert row["status"] == "skipped"
    assert "ch96/optimized_vec_cudaonly.py" in row["reason"] and "CUDA" in row["reason"]


def test_syntax_error_fails_only_that_pair(suite):
    pair = suite["pairs"]["ch96:broken"]
    assert pair["status"] == "failed"
    row = suite["rows"]["broken"]
    assert row["status"] == "failed"
    assert "ch96/baseline_broken.py" in row["reason"] and "SyntaxError" in row["reason"]
    assert suite["rows"]["vec"]["status"] == "ok"  # same run, other pair measured


def test_cuda_only_pair_is_skipped(suite):
    pair = suite["pairs"]["ch96:gpu"]
    assert pair["status"] == "skipped"
    row = suite["rows"]["gpu"]
    assert row["status"] == "skipped"
    assert "ch96/baseline_gpu.py" in row["reason"] and "needs a CUDA GPU" in row["reason"]


def test_baseline_raising_fails_the_pair(suite):
    row = suite["rows"]["basefail"]
    assert row["status"] == "failed"
    assert "ch96/baseline_basefail.py" in row["reason"] and "baseline exploded" in row["reason"]


def test_hanging_pair_times_out_and_the_rest_is_measured(suite):
    row = suite["rows"]["hang"]
    assert row["status"] == "failed"
    assert "timed out" in row["reason"]
    pair = suite["pairs"]["ch96:hang"]
    assert pair["duration_s"] >= HANG_TIMEOUT_S * 0.9
    assert suite["rows"]["vec"]["status"] == "ok"  # measured after the hang


def test_results_jsonl_has_one_line_per_pair(suite):
    result = suite["result"]
    lines = (result.run_dir / "results.jsonl").read_text().splitlines()
    assert len(lines) == len(suite["selection"]) == 5
    assert [json.loads(line)["pair"] for line in lines] == [p.id for p, _ in suite["selection"]]
    full = json.loads((result.run_dir / "results.json").read_text())
    assert [p["pair"] for p in full["pairs"]] == [json.loads(line)["pair"] for line in lines]
    assert full["fingerprint"]["hardware_key"] == "cpu"
    assert (result.run_dir / "logs" / "ch96__vec.log").exists()


def test_exit_code_and_report(suite):
    from core.report import render

    result = suite["result"]
    assert result.exit_code() == 1  # failed examples
    text = render(result.to_dict(), "table")
    assert "MISMATCH" in text and "SKIPPED" in text and "FAILED" in text
    assert "ch96:vec_wrong" in text and "ch96:vec" in text.split()
    assert any(line.startswith("[5/5] ch96:vec") for line in suite["progress"])


def test_gate_uses_stored_entry(suite):
    gate = suite["rows"]["vec"]["expectation"]
    assert gate["status"] == "pass" and gate["stored_speedup"] == 1.0
    assert "expectation" not in suite["rows"]["vec_wrong"]


def test_update_expectations_writes_only_verified_examples(suite):
    result, chapter = suite["result"], suite["chapter"]
    assert result.expectation_updates == ["ch96/expectations_cpu.json"]
    stored = json.loads((chapter / "expectations_cpu.json").read_text())["examples"]
    assert set(stored) == {"vec", "vec_wrong", "elsewhere"}  # nothing failed/skipped was added
    assert stored["vec_wrong"] == SEEDED_EXPECTATIONS["examples"]["vec_wrong"]  # not overwritten
    assert stored["elsewhere"] == SEEDED_EXPECTATIONS["examples"]["elsewhere"]
    vec = stored["vec"]
    assert vec["speedup"] == round(suite["rows"]["vec"]["speedup"], 4)
    assert vec["tolerance"] == 0.9  # the hand-set tolerance is kept
    assert vec["samples"] == {"baseline": 3, "optimized": 3}
    assert "date" in vec["provenance"]
    assert sorted(p.name for p in chapter.iterdir() if "expectations" in p.name) == [
        "expectations_cpu.json"]
