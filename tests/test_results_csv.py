"""results.csv (core.results_csv) from typed records, its incremental writes during a run
(also one cut short by Ctrl-C), and `make clean` / `make clean-runs`, which keep and delete
run directories. No child process here: records are built in the test, and the runner's
probe, requirements check and pair children are faked. (tests/test_runner.py reads the CSV
of a real run.)"""
from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

import core.runner
from core import precheck, results_csv
from core.benchmark import Workload
from core.compile_time import ColdStart
from core.discovery import select
from core.gate import GateResult
from core.goodput import GoodputStats
from core.memory import Footprint
from core.record import (ExampleResult, PairResult, Rates, RunRecord, SideResult,
                         Verification)
from core.runner import RunOptions, run_suite
from core.stats import summarize
from tests.conftest import CPU_KEY, vec_chapter_files, vec_pair_file

REPO = Path(__file__).resolve().parents[1]


def _side(ms: float, **extra) -> SideResult:
    return SideResult(summarize([ms * (1 + 0.001 * i) for i in range(10)]),
                      Workload(bytes=1 << 20), **extra)


def _goodput(rps: float) -> GoodputStats:
    return GoodputStats(requests=100, duration_s=10.0, ttft_p50_s=0.1, ttft_p99_s=0.2,
                        tpot_p50_s=0.01, tpot_p99_s=0.02, tokens_per_s=1000.0, met=int(rps * 10),
                        goodput_rps=rps)


def _example(name: str, **values) -> ExampleResult:
    return ExampleResult(name=name, id=f"ch95:{name}", file=f"ch95/optimized_{name}.py",
                         chapter="ch95", stem="x", **values)


def _record(tmp_path: Path) -> RunRecord:
    base = _side(2.0, memory=Footprint(100, 300), cold_starts=[ColdStart(10.0, 1.0)] * 3,
                 goodput=[_goodput(5.0)] * 3)
    speed = _example(
        "x", timing=_side(1.0, rates=Rates(bound="memory", gbps=2949.5, ceiling="copy_gbps",
                                           pct_of_ceiling=98.25)),
        speedup=2.0, speedup_ci=(1.9, 2.1), cpu_bound="tokenizer on the host",
        verification=Verification(True, "match", 0.0, 1.5e-7, 4),
        expectation=GateResult("pass", "2.00x within the stored 1.95x", 1.95, 1.755))
    memory = _example("x_memory", goal="memory", timing=_side(2.2, memory=Footprint(100, 100)),
                      speedup=0.9, speedup_ci=(0.88, 0.92), noisy="too few samples")
    compiled = _example("x_compile", goal="compile_time",
                        timing=_side(2.0, cold_starts=[ColdStart(4.0, 1.0)] * 3),
                        speedup=1.0, speedup_ci=(0.99, 1.01), negative_result="slower by design")
    serving = _example("x_serving", goal="goodput", timing=_side(1.5, goodput=[_goodput(10.0)] * 3),
                       speedup=1.3, speedup_ci=(1.2, 1.4),
                       teaching=True)
    failed = _example("x_wrong", status="failed",
                      reason='verification failed, worst at (7,):\n"1.0" vs "2.0"',
                      verification=Verification(False, "1 of 64 elements differ", 1.0, 0.5, 1))
    pair = PairResult(pair="ch95:x", baseline=base,
                      examples=[speed, memory, compiled, serving, failed])
    for ex in pair.examples:
        ex.baseline = base if ex.timing is not None else None
    skipped = PairResult(pair="ch95:gpu", examples=[_example("gpu")]).fail_all(
        "ch95/baseline_gpu.py: needs a CUDA GPU; none is available on this machine", "skipped")
    return RunRecord(tmp_path, {"hardware_key": "cpu"}, {}, pairs=[pair, skipped])


def _read(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == results_csv.COLUMNS
        return {row["example"]: row for row in reader}


def test_one_row_per_example_with_typed_cells(tmp_path):
    record = _record(tmp_path)
    rows = _read(results_csv.write(record, tmp_path / "results.csv"))
    assert list(rows) == ["ch95:x", "ch95:x_memory", "ch95:x_compile", "ch95:x_serving",
                          "ch95:x_wrong", "ch95:gpu"]
    x = rows["ch95:x"]
    assert (x["pair"], x["variant"], x["file"], x["status"], x["goal"]) == (
        "ch95:x", "x", "ch95/optimized_x.py", "ok", "speed")
    assert float(x["speedup"]) == 2.0 and (float(x["speedup_low"]), float(x["speedup_high"])) == (1.9, 2.1)
    assert float(x["baseline_ms"]) == record.pairs[0].baseline.median_ms  # full precision
    assert float(x["optimized_ms"]) == record.pairs[0].examples[0].optimized_ms
    assert (float(x["rate"]), x["rate_unit"], float(x["pct_of_ceiling"]), x["ceiling"]) == (
        2949.5, "GB/s", 98.25, "copy_gbps")
    assert (x["verification"], float(x["max_rel_err"])) == ("match", 1.5e-7)
    assert (x["expectation"], float(x["stored_speedup"])) == ("pass", 1.95)
    assert x["expectation_message"] == "2.00x within the stored 1.95x"
    assert x["goal_ratio"] == "" and x["noisy"] == "" and x["reason"] == ""
    assert (x["teaching"], x["cpu_bound"], x["tags"]) == ("false", "tokenizer on the host", "cpu_bound")
    # the goal's own ratio where the goal is not speed
    assert float(rows["ch95:x_memory"]["goal_ratio"]) == 2.0  # 400 / 200 peak bytes
    assert rows["ch95:x_memory"]["noisy"] == "too few samples"
    assert "noisy" in rows["ch95:x_memory"]["tags"].split(";")
    assert float(rows["ch95:x_compile"]["goal_ratio"]) == pytest.approx(11.0 / 5.0)
    assert rows["ch95:x_compile"]["negative_result"] == "slower by design"
    assert rows["ch95:x_compile"]["tags"] == "negative"
    assert float(rows["ch95:x_serving"]["goal_ratio"]) == 2.0
    assert (rows["ch95:x_serving"]["teaching"], rows["ch95:x_serving"]["tags"]) == ("true", "teaching")
    # failures and skips: no numbers, the reason (newlines, commas and quotes survive)
    wrong = rows["ch95:x_wrong"]
    assert wrong["status"] == "failed" and wrong["speedup"] == wrong["optimized_ms"] == ""
    assert wrong["reason"] == 'verification failed, worst at (7,):\n"1.0" vs "2.0"'
    assert wrong["verification"] == "1 of 64 elements differ"
    gpu = rows["ch95:gpu"]
    assert (gpu["pair"], gpu["status"]) == ("ch95:gpu", "skipped")
    assert gpu["reason"] == "ch95/baseline_gpu.py: needs a CUDA GPU; none is available on this machine"


def test_unbounded_goodput_ratio_is_written_as_inf(tmp_path):
    record = _record(tmp_path)
    record.pairs[0].baseline.goodput = [_goodput(0.0)] * 3  # the baseline met no SLO
    rows = _read(results_csv.write(record, tmp_path / "results.csv"))
    assert math.isinf(float(rows["ch95:x_serving"]["goal_ratio"]))


def test_headline_rate_follows_the_bound():
    assert results_csv.headline_rate(None) == (None, "")
    assert results_csv.headline_rate(Rates(bound="compute", tflops=612.5, gbps=1.0)) == (612.5, "TFLOP/s")
    assert results_csv.headline_rate(Rates(bound="units", units_per_s=4.1e4, unit_name="tokens")) == (
        4.1e4, "tokens/s")
    assert results_csv.headline_rate(Rates(bound="link", link_gbps=50.0, link="h2d")) == (50.0, "GB/s h2d")


def _ok_result(pair_id: str) -> PairResult:
    name = pair_id.split(":")[1]
    base = _side(2.0)
    ex = ExampleResult(name=name, id=pair_id, file=f"ch95/optimized_{name}.py", timing=_side(1.0),
                       baseline=base, speedup=2.0, speedup_ci=(1.9, 2.1),
                       verification=Verification(True, "match", 0.0, 0.0, 4))
    return PairResult(pair=pair_id, device="cpu", baseline=base, examples=[ex])


def test_csv_is_written_after_each_pair_and_survives_ctrl_c(make_chapter, fake_root, tmp_path,
                                                            monkeypatch):
    make_chapter("ch95", {**vec_chapter_files(default=vec_pair_file()), "baseline_w.py": "", "optimized_w.py": ""})
    seen_after_first: list[dict] = []

    def fake_run_pair(pair, examples, options, run_dir, entries=None, env=None, shared_gpu=False):
        if pair.id == "ch95:w":  # the second pair: the first one's row is on disk already
            seen_after_first.append(_read(run_dir / "results.csv"))
            raise KeyboardInterrupt
        return _ok_result(pair.id)
    monkeypatch.setattr(core.runner, "probe", lambda run_dir, **kw: {
        "fingerprint": {"hardware_key": CPU_KEY, "device": "cpu"}, "ceilings": {}})
    monkeypatch.setattr(precheck, "check", lambda *args: precheck.Precheck())
    monkeypatch.setattr(core.runner, "run_pair", fake_run_pair)
    selection = select(["ch95"], root=fake_root)
    assert [p.id for p, _ in selection] == ["ch95:vec", "ch95:w"]
    record = run_suite(selection, RunOptions(output_dir=tmp_path / "runs"))
    assert record.interrupted
    assert list(seen_after_first[0]) == ["ch95:vec"]
    rows = _read(record.run_dir / "results.csv")
    assert list(rows) == ["ch95:vec"]  # the finished pair, as in results.json
    assert rows["ch95:vec"]["status"] == "ok" and float(rows["ch95:vec"]["speedup"]) == 2.0
    assert rows["ch95:vec"]["expectation"] == "new"  # annotated by the runner before writing
    full = json.loads((record.run_dir / "results.json").read_text())
    assert full["interrupted"] and [p["pair"] for p in full["pairs"]] == ["ch95:vec"]


# --- make clean / make clean-runs --------------------------------------------------------------

make = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _tree(root: Path) -> Path:
    for folder in ("build/cuda", "core/__pycache__", "ch07/__pycache__", ".pytest_cache",
                   ".venv/lib/__pycache__", "artifacts/runs/20260101-000000/logs",
                   "artifacts/runs/20260102-000000"):
        (root / folder).mkdir(parents=True)
    (root / "build/cuda/libx.so").write_text("")
    (root / "artifacts/runs/20260101-000000/results.json").write_text("{}")
    return root


def _make(root: Path, *args: str, answer: str | None = None, **env: str):
    return subprocess.run(["make", "-s", "-f", str(REPO / "Makefile"), *args], cwd=root,
                          input=answer, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", **env})


@make
def test_make_clean_lists_and_deletes_caches_but_keeps_runs(tmp_path):
    root = _tree(tmp_path)
    out = _make(root, "clean", answer="")
    assert out.returncode == 0, out.stderr
    for path in ("build", ".pytest_cache", "core/__pycache__", "ch07/__pycache__"):
        assert f"  {path}\n" in out.stdout
        assert not (root / path).exists()
    assert (root / "artifacts/runs/20260101-000000/results.json").exists()
    assert (root / ".venv/lib/__pycache__").exists()  # hidden folders are not ours
    assert "kept artifacts/runs" in out.stdout
    assert "nothing to delete" in _make(root, "clean").stdout


@make
def test_make_clean_runs_asks_first(tmp_path):
    root = _tree(tmp_path)
    runs = root / "artifacts" / "runs"
    declined = _make(root, "clean-runs", answer="n\n")
    assert declined.returncode == 0 and "nothing deleted" in declined.stdout
    assert "artifacts/runs/20260101-000000" in declined.stdout and "delete 2 run directories?" in declined.stdout
    no_answer = _make(root, "clean-runs", answer="")  # not a terminal, no YES=1
    assert no_answer.returncode != 0 and "YES=1" in no_answer.stderr
    assert len(list(runs.iterdir())) == 2
    assert _make(root, "clean-runs", answer="y\n").returncode == 0
    assert list(runs.iterdir()) == []
    (runs / "20260103-000000").mkdir()
    done = _make(root, "clean-runs", answer="", YES="1")
    assert done.returncode == 0 and "deleted 1 run directory" in done.stdout
    assert list(runs.iterdir()) == [] and "no run directories" in _make(root, "clean-runs").stdout


@make
def test_make_help_lists_clean_and_clean_runs(tmp_path):
    out = _make(tmp_path, "help").stdout
    assert "make clean " in out and "make clean-runs" in out and "YES=1" in out
