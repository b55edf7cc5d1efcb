"""Report writers, run comparison verdicts, profiler command construction, hw peak on CPU."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.aisp import app
from core import profiling
from core.compare import compare_runs, is_regression, verdict
from core.report import summary_markdown, write_reports


def _row(name: str, base_ms: float, opt_ms: float, *, flops: float = 0.0, bytes_: float = 1e9,
         status: str = "ok", spread: float = 0.01, seed: int = 0) -> dict:
    rng = random.Random(seed)
    samples = [opt_ms * (1 + rng.uniform(-spread, spread)) for _ in range(50)]
    row = {"id": f"ch07:{name}", "name": name, "status": status, "teaching": False}
    if status != "ok":
        row["reason"] = "verification failed: boom"
        return row
    row.update(
        baseline_ms=base_ms, optimized_ms=opt_ms, speedup=base_ms / opt_ms,
        speedup_ci=[base_ms / opt_ms * 0.98, base_ms / opt_ms * 1.02],
        stats={"median": opt_ms, "samples": samples, "n": 50},
        workload={"bytes": bytes_, "flops": flops, "flops_dtype": "fp32"},
        rates={"bound": "compute" if flops else "memory", "gbps": bytes_ / opt_ms / 1e6,
               "tflops": flops / opt_ms / 1e9, "pct_of_ceiling": 50.0},
        verification={"ok": True, "max_rel_err": 0.0},
        expectation={"status": "pass", "stored_speedup": base_ms / opt_ms * 0.97})
    return row


def _result(rows: list[dict], run_dir: Path, **extra) -> dict:
    return {"run_dir": str(run_dir), "interrupted": False,
            "fingerprint": {"device": "NVIDIA H100 80GB HBM3", "hardware_key": "h100",
                            "torch": "2.11", "driver": "580"},
            "ceilings": {"copy_gbps": 3000.0, "matmul_fp32_tflops": 51.0,
                         "matmul_bf16_tflops": 790.0},
            "pairs": [{"pair": r["id"], "examples": [r]} for r in rows], **extra}


# --- summary.md and charts ------------------------------------------------------------------

def test_write_reports_makes_summary_and_both_charts(tmp_path):
    rows = [_row("copy", 1.0, 0.5), _row("matmul", 20.0, 10.0, flops=1e11, bytes_=2e8),
            _row("broken", 0, 0, status="failed")]
    written = write_reports(_result(rows, tmp_path), tmp_path)
    assert [p.name for p in written] == ["summary.md", "speedups.png", "roofline.png"]
    for png in written[1:]:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    summary = (tmp_path / "summary.md").read_text()
    assert "NVIDIA H100 80GB HBM3" in summary and "copy_gbps" in summary
    assert "| ch07:copy" in summary and "2.00x" in summary
    assert "FAILED ch07:broken: verification failed: boom" in summary
    assert "![roofline.png](roofline.png)" in summary


def test_charts_are_skipped_when_nothing_was_measured(tmp_path):
    written = write_reports(_result([_row("broken", 0, 0, status="failed")], tmp_path), tmp_path)
    assert [p.name for p in written] == ["summary.md"]


def test_summary_lists_profiles_and_skipped_profilers(tmp_path):
    result = _result([_row("copy", 1.0, 0.5)], tmp_path)
    result["pairs"][0]["profile"] = {
        "mode": "deep",
        "sides": {"baseline": {"trace": "t.json", "top": [
            {"name": "copy_scalar", "calls_per_run": 1, "us_per_run": 225.0}]}},
        "ncu": {"status": "ok", "sides": {"baseline": {"report": "b.ncu-rep", "kernels": [
            {"kernel": "copy_scalar", "duration_us": 226.0, "dram_pct": 79.0, "sm_pct": 20.0,
             "achieved_occupancy_pct": 90.0}]}}},
        "nsys": {"status": "skipped", "reason": "nsys not found"}}
    summary = summary_markdown(result)
    assert "copy_scalar" in summary and "225.0" in summary and "b.ncu-rep" in summary
    assert "nsys: skipped (nsys not found)" in summary


# --- compare --------------------------------------------------------------------------------

def test_verdicts():
    old = [1.0 + 0.001 * (i % 7) for i in range(60)]
    assert verdict(old, [x * 1.3 for x in old])[0] == "slower"
    assert verdict(old, [x * 0.7 for x in old])[0] == "faster"
    assert verdict(old, list(old))[0] == "same"
    noisy = [1.0 + 0.5 * ((i * 37) % 11) / 10 for i in range(8)]
    assert verdict(noisy, [x * 1.06 for x in noisy])[0] == "inconclusive"


def test_compare_runs_flags_slower_and_newly_failed(tmp_path):
    old = _result([_row("a", 1.0, 0.5), _row("b", 1.0, 0.5), _row("c", 1.0, 0.5)], tmp_path)
    new = _result([_row("a", 1.0, 0.5, seed=1), _row("b", 1.0, 0.8),
                   _row("c", 0, 0, status="failed"), _row("d", 1.0, 0.5)], tmp_path)
    rows = {r["id"]: r for r in compare_runs(old, new)}
    assert rows["ch07:a"]["verdict"] == "same"
    assert rows["ch07:b"]["verdict"] == "slower" and is_regression(rows["ch07:b"])
    assert rows["ch07:c"]["verdict"] == "failed" and is_regression(rows["ch07:c"])
    assert rows["ch07:d"]["verdict"] == "only in new run" and not is_regression(rows["ch07:d"])


def _write_run(path: Path, rows: list[dict]) -> Path:
    path.mkdir(parents=True)
    (path / "results.json").write_text(json.dumps(_result(rows, path)))
    return path


def test_bench_compare_cli_exit_codes(tmp_path):
    runner = CliRunner()
    old = _write_run(tmp_path / "old", [_row("a", 1.0, 0.5)])
    same = _write_run(tmp_path / "same", [_row("a", 1.0, 0.5, seed=3)])
    slow = _write_run(tmp_path / "slow", [_row("a", 1.0, 0.9)])
    ok = runner.invoke(app, ["bench", "compare", str(old), str(same)])
    assert ok.exit_code == 0 and "same" in ok.output
    bad = runner.invoke(app, ["bench", "compare", str(old), str(slow / "results.json")])
    assert bad.exit_code == 1 and "slower" in bad.output
    missing = runner.invoke(app, ["bench", "compare", str(old), str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no results.json" in missing.output


# --- profiler commands ------------------------------------------------------------------------

def test_ncu_command_filters_to_the_timed_range_with_clock_control_none(tmp_path):
    cmd = profiling.ncu_command(tmp_path / "b.ncu-rep", "copy_vectorized",
                                ["--profile-side", "spec.json", "copy_vectorized"], ncu="/x/ncu")
    assert cmd[0] == "/x/ncu"
    assert cmd[cmd.index("--nvtx-include") + 1] == "aisp_copy_vectorized_timed/"
    assert "--nvtx" in cmd and cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--replay-mode") + 1] == "kernel"
    assert cmd[cmd.index("--export") + 1] == str(tmp_path / "b.ncu-rep")
    assert cmd[-5:] == ["-m", "core.child", "--profile-side", "spec.json", "copy_vectorized"]
    app_cmd = profiling.ncu_command(tmp_path / "r", "s", [], replay_mode="application",
                                    clock_control="base")
    assert app_cmd[app_cmd.index("--replay-mode") + 1] == "application"
    assert app_cmd[app_cmd.index("--clock-control") + 1] == "base"


def test_ncu_summary_parsing_handles_units_and_log_lines():
    text = "\n".join([
        "==PROF== Connected to process 123",
        '"ID","Kernel Name","gpu__time_duration.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed",'
        '"sm__throughput.avg.pct_of_peak_sustained_elapsed","sm__warps_active.avg.pct_of_peak_sustained_active"',
        '"","","usecond","%","%","%"',
        '"0","copy_float4(const float4 *, float4 *, long)","182.50","92.31","12.50","88.10"',
        '"1","copy_float4(const float4 *, float4 *, long)","1,182.00","n/a","12.50","88.10"'])
    kernels = profiling.parse_ncu_csv(text)
    assert kernels[0] == {"kernel": "copy_float4(const float4 *, float4 *, long)",
                          "duration_us": 182.5, "dram_pct": 92.31, "sm_pct": 12.5,
                          "achieved_occupancy_pct": 88.1}
    assert kernels[1]["duration_us"] == 1182.0 and "dram_pct" not in kernels[1]
    assert profiling.parse_ncu_csv("==ERROR== nothing") == []


def test_nsys_command_traces_cuda_and_nvtx(tmp_path):
    cmd = profiling.nsys_command(tmp_path / "rep", ["--profile-side", "s.json", "baseline"], nsys="nsys")
    assert cmd[:2] == ["nsys", "profile"] and "cuda,nvtx" in cmd and str(tmp_path / "rep") in cmd


def test_range_names_are_plain():
    assert profiling.range_name("copy_vectorized", "timed") == "aisp_copy_vectorized_timed"


# --- progress and hw peak on CPU ----------------------------------------------------------------

def test_progress_quiet_and_plain(capsys):
    from cli.progress import suite_progress

    with suite_progress(2, quiet=True) as report:
        report("[1/2] ch07:x ...")
    assert capsys.readouterr().err == ""
    with suite_progress(2) as report:  # stderr is not a terminal under pytest: plain lines
        report("[1/2] ch07:x ...")
    assert "[1/2] ch07:x ..." in capsys.readouterr().err


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="asserts the CPU message")
def test_hw_peak_without_gpu_says_so():
    result = CliRunner().invoke(app, ["hw", "peak"])
    assert result.exit_code == 1 and "needs a CUDA GPU" in result.output
