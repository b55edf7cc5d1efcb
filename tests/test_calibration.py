"""A/A runs and the gate's measured tolerances (core.calibration, `bench run --aa`,
`bench calibrate`)."""
from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from cli.aisp import app
from core import calibration
from core.discovery import select
from core.gate import CPU_BOUND_TOLERANCE, DEFAULT_TOLERANCE
from core.goals.speed import Speed
from core.runner import run_suite
from tests.conftest import vec_chapter_files, vec_pair_file


def _run(key: str, ratios: dict[str, float], cpu_bound: frozenset[str] = frozenset(),
         aa: bool = True) -> dict:
    """A results.json's contents with one example per pair: its A/A row (chNN:stem_aa), or
    with `aa=False` its ordinary row."""
    return {"run_dir": f"/runs/{key}", "fingerprint": {"hardware_key": key, "host": "vm"},
            "pairs": [{"examples": [{"id": f"{pair}_aa" if aa else pair, "status": "ok",
                                     "speedup": ratio,
                                     "cpu_bound": "host" if pair in cpu_bound else ""}]}
                      for pair, ratio in ratios.items()]}


def test_the_largest_stray_sets_the_tolerance_of_its_family():
    first = {f"ch0{i}:p": 1.0 + 0.002 * i for i in range(1, 7)}
    second = {f"ch0{i}:p": 1.0 - 0.003 * i for i in range(1, 7)} | {"ch09:slow": 0.98}
    found = calibration.summarize([_run("h100", first), _run("h100", second)])
    device = found.families["device"]
    assert device.ratios == 13 and "ch09:slow_aa 0.980x (run 2)" in device.worst
    distance = 2 * abs(math.log(0.98))  # a stored ratio and a gate run, each 2% off the other way
    assert device.spread_ln == pytest.approx(distance, abs=1e-5) and device.source == "aa"
    assert device.tolerance == pytest.approx(math.ceil((1 - math.exp(-distance)) / 0.005) * 0.005)
    assert "cpu_bound" not in found.families  # no host-paced pair among them


def test_runs_of_one_commit_give_the_distance_between_machines():
    """Ordinary runs of the same code on two machines: each example's two speedups are one
    distance, host differences included; runs of different commits are refused."""
    first = {f"ch{i:02d}:p": 2.0 for i in range(1, 12)}
    second = {f"ch{i:02d}:p": 2.0 * (1 + 0.01 * i) for i in range(1, 12)}
    runs = [_run("h100", first, aa=False), _run("h100", second, aa=False)]
    for run in runs:
        run["fingerprint"]["git_commit"] = "abc1234"
    found = calibration.summarize(runs).families["device"]
    assert found.source == "runs" and found.ratios == 11
    assert found.spread_ln == pytest.approx(math.log(1.11), abs=1e-5) and "ch11:p" in found.worst
    assert found.tolerance == pytest.approx(math.ceil((1 - 1 / 1.11) / 0.005) * 0.005)
    runs[1]["fingerprint"]["git_commit"] = "def5678"
    with pytest.raises(ValueError, match="different commits"):
        calibration.summarize(runs)
    with pytest.raises(ValueError, match="mix A/A rows"):
        calibration.summarize([_run("h100", {"ch01:a": 1.0}), _run("h100", first, aa=False)])


def test_too_few_ratios_or_runs_or_mixed_gpus_set_nothing():
    small = calibration.summarize([_run("h100", {"ch01:a": 1.01, "ch02:b": 0.99},
                                        frozenset({"ch02:b"})), _run("h100", {"ch01:a": 1.0})])
    assert small.families["device"].tolerance is None  # 2 ratios: a guess, not a tolerance
    assert small.families["cpu_bound"].ratios == 1
    with pytest.raises(ValueError, match="at least 2"):
        calibration.summarize([_run("h100", {"ch01:a": 1.0})])
    with pytest.raises(ValueError, match="one GPU model"):
        calibration.summarize([_run("h100", {"ch01:a": 1.0}), _run("h200", {"ch01:a": 1.0})])


def test_the_gate_uses_the_measured_tolerance_of_the_family(tmp_path):
    ratios = {f"ch{i:02d}:p": 1.01 for i in range(1, 12)}
    written = calibration.write(calibration.summarize([_run("h100", ratios), _run("h100", ratios)]),
                                tmp_path)
    assert written == tmp_path / "calibration" / "h100.json"
    try:
        assert calibration.activate("2x_h100", tmp_path) is not None  # a multi-GPU key: the model's
        assert Speed().tolerance(None) == 0.03  # 2% of stray rounds up to the 3% minimum
        assert Speed().tolerance(None, "host") == CPU_BOUND_TOLERANCE  # not measured: the default
        assert Speed().tolerance({"cpu_bound": "host"}) == CPU_BOUND_TOLERANCE
    finally:
        calibration.activate("", tmp_path)
    assert Speed().tolerance(None) == DEFAULT_TOLERANCE


def test_an_aa_run_times_each_baseline_against_itself(make_chapter, fake_root, fast_options):
    make_chapter("ch93", vec_chapter_files(default=vec_pair_file("return torch.add(*inputs)")))
    selection = calibration.aa_selection(select(["ch93"], root=fake_root))
    assert [e.id for _, examples in selection for e in examples] == ["ch93:vec_aa"]
    record = run_suite(selection, fast_options)
    row = record.rows[0]
    assert row.id == "ch93:vec_aa" and row.status == "ok", row.reason
    assert row.verification.ok and 0.3 < row.speedup < 3.0  # the same code: near 1 on a busy CPU


def _results_json(folder, key: str, ratios: dict[str, float]):
    """A results.json as `bench run --aa` writes it (RunRecord's own format)."""
    from core.record import ExampleResult, PairResult, RunRecord

    pairs = []
    for pair, ratio in ratios.items():
        ex = ExampleResult(name=f"{pair.split(':')[1]}_aa", id=f"{pair}_aa", file="x.py", status="ok")
        ex.speedup = ratio
        pairs.append(PairResult(pair=pair, examples=[ex]))
    folder.mkdir(parents=True)
    record = RunRecord(folder, {"hardware_key": key, "host": folder.name}, {}, pairs)
    (folder / "results.json").write_text(json.dumps(record.to_dict()))
    return folder


def test_bench_calibrate_writes_the_tolerances_and_refuses_what_it_cannot_use(tmp_path, monkeypatch):
    cli = CliRunner()
    stored = cli.invoke(app, ["bench", "run", "--targets", "ch07", "--aa", "--update-expectations"])
    assert stored.exit_code == 2 and "drop --update-expectations" in stored.output
    monkeypatch.setenv("AISP_ROOT", str(tmp_path))  # calibration/ is written beside the chapters
    ratios = {f"ch{i:02d}:p": 1.0 + 0.004 * (i % 3) for i in range(1, 12)}
    one, two = (_results_json(tmp_path / name, "h200", ratios) for name in ("vm1", "vm2"))
    alone = cli.invoke(app, ["bench", "calibrate", str(one)])
    assert alone.exit_code == 2 and "at least 2" in alone.output, alone.output
    both = cli.invoke(app, ["bench", "calibrate", str(one), str(two)])
    assert both.exit_code == 0, both.output
    written = json.loads((tmp_path / "calibration" / "h200.json").read_text())
    assert written["families"]["device"]["ratios"] == 22
    assert written["families"]["device"]["tolerance"] == 0.03  # 0.8% stray: the 3% minimum
    assert [r["host"] for r in written["runs"]] == ["vm1", "vm2"]
