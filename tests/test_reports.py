"""Report writers, run comparison verdicts, profiler command construction, hw peak on CPU."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.aisp import app
from core import profiling
from core.benchmark import Workload
from core.compare import CompareRow, compare_runs, is_regression, load_run, verdict
from core.gate import GateResult
from core.metrics import rates
from core.record import ExampleResult, PairResult, RunRecord, SideResult, Verification
from core.report import PAIR_BUDGET_S, render, row, slow_notes, summary_markdown, throttle_notes, write_reports
from core.stats import summarize

CEILINGS = {"copy_gbps": 3000.0, "matmul_fp32_tflops": 51.0, "matmul_bf16_tflops": 790.0}


def make_side(ms: float, workload: Workload, *, spread: float = 0.01, seed: int = 0) -> SideResult:
    """A side timed at about `ms` (50 samples within ±spread), with its rates."""
    rng = random.Random(seed)
    stats = summarize([ms * (1 + rng.uniform(-spread, spread)) for _ in range(50)])
    return SideResult(stats, workload, rates(workload, stats.median, CEILINGS))


def make_example(name: str, base_ms: float, opt_ms: float, *, flops: float = 0.0,
                 bytes_: float = 1e9, status: str = "ok", spread: float = 0.01, seed: int = 0,
                 teaching: bool = False, verification: Verification | None = None,
                 gate: str = "pass") -> ExampleResult:
    """ch07:<name>, measured at base_ms vs opt_ms, or failed/skipped without timings."""
    workload = Workload(bytes=bytes_, flops=flops, flops_dtype="fp32")
    ex = ExampleResult(name=name, id=f"ch07:{name}", file=f"ch07/optimized_{name}.py",
                       chapter="ch07", stem=name, teaching=teaching, verification=verification)
    if status != "ok":
        ex.fail("verification failed: boom", status)
        return ex
    ex.baseline = make_side(base_ms, workload, spread=spread, seed=seed + 1000)
    ex.timing = make_side(opt_ms, workload, spread=spread, seed=seed)
    ex.verification = verification or Verification(ok=True, max_rel_err=0.0, checks=3)
    speedup = ex.baseline.median_ms / ex.timing.median_ms
    ex.speedup, ex.speedup_ci = speedup, (speedup * 0.98, speedup * 1.02)
    ex.expectation = GateResult(gate, f"{gate} message", stored_speedup=speedup * 0.97,
                                floor=speedup * 0.97 * 0.9)
    return ex


def make_record(examples: list[ExampleResult], run_dir: Path, **extra) -> RunRecord:
    """One pair per example (its baseline shared with the pair, as the runner does)."""
    pairs = [PairResult(pair=ex.id, status=ex.status, reason=ex.reason, baseline=ex.baseline,
                        examples=[ex]) for ex in examples]
    return RunRecord(run_dir=run_dir, fingerprint={"device": "NVIDIA H100 80GB HBM3",
                                                   "hardware_key": "h100", "torch": "2.11",
                                                   "driver": "580"},
                     ceilings=dict(CEILINGS), pairs=pairs, **extra)


# --- summary.md and charts ------------------------------------------------------------------

def test_write_reports_makes_summary_and_both_charts(tmp_path):
    rows = [make_example("copy", 1.0, 0.5), make_example("matmul", 20.0, 10.0, flops=1e11, bytes_=2e8),
            make_example("broken", 0, 0, status="failed")]
    written = write_reports(make_record(rows, tmp_path))
    assert [p.name for p in written] == ["summary.md", "speedups.png", "roofline.png"]
    for png in written[1:]:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    summary = (tmp_path / "summary.md").read_text()
    assert "NVIDIA H100 80GB HBM3" in summary and "copy_gbps" in summary
    assert "| ch07:copy" in summary and "2.00x" in summary
    assert "FAILED ch07:broken: verification failed: boom" in summary
    assert "![roofline.png](roofline.png)" in summary


def test_charts_are_skipped_when_nothing_was_measured(tmp_path):
    written = write_reports(make_record([make_example("broken", 0, 0, status="failed")], tmp_path),
                            tmp_path)
    assert [p.name for p in written] == ["summary.md"]


def test_summary_lists_profiles_and_skipped_profilers(tmp_path):
    record = make_record([make_example("copy", 1.0, 0.5)], tmp_path)
    record.pairs[0].profile = {
        "mode": "deep",
        "sides": {"baseline": {"trace": "t.json", "top": [
            {"name": "copy_scalar", "calls_per_run": 1, "us_per_run": 225.0}]}},
        "ncu": {"status": "ok", "sides": {"baseline": {"report": "b.ncu-rep", "kernels": [
            {"kernel": "copy_scalar", "duration_us": 226.0, "dram_pct": 79.0, "sm_pct": 20.0,
             "achieved_occupancy_pct": 90.0}]}}},
        "nsys": {"status": "skipped", "reason": "nsys not found"}}
    summary = summary_markdown(record)
    assert "copy_scalar" in summary and "225.0" in summary and "b.ncu-rep" in summary
    assert "nsys: skipped (nsys not found)" in summary


def test_render_table_notes_and_json(tmp_path):
    mismatch = make_example("wrong", 0, 0, status="failed",
                            verification=Verification(ok=False, message="differs", max_rel_err=0.5))
    record = make_record([
        make_example("copy", 1.0, 0.5), mismatch,
        make_example("skip", 0, 0, status="skipped"),
        make_example("huge", 30.0, 1.0), make_example("demo", 30.0, 1.0, teaching=True),
        make_example("slow", 1.0, 0.9, gate="regression")], tmp_path,
        expectation_updates=["ch07/expectations_h100.json"])
    record.pairs[0].clocks_start = {"temperature_c": 40}
    record.pairs[0].clocks_end = {"throttle_reasons": 0x40, "sm_clock_mhz": 1100, "temperature_c": 90}
    text = render(record, "table")
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith("ch07:")}
    copy = lines["ch07:copy"]
    assert "2.00x [1.9" in copy and re.search(r" (19[89]\d|20[01]\d) GB/s ", copy)
    assert "67%" in copy  # ~2000 GB/s of the 3000 GB/s copy ceiling
    assert "ok (exact)" in copy and copy.rstrip().endswith("pass")
    assert "MISMATCH" in lines["ch07:wrong"] and "SKIPPED" in lines["ch07:skip"]
    assert "[teaching]" in lines["ch07:demo"] and lines["ch07:slow"].rstrip().endswith("regression")
    assert "FAILED ch07:wrong: verification failed: boom" in text
    assert "SKIPPED ch07:skip:" in text and "REGRESSION ch07:slow: regression message" in text
    assert re.search(r"WARNING ch07:huge: speedup (29\.\d|30\.\d)x exceeds 20x", text)
    assert "WARNING ch07:demo" not in text
    assert "THROTTLED ch07:copy: hardware thermal slowdown" in text and "1100 MHz" in text
    assert "updated: ch07/expectations_h100.json" in text
    assert f"results: {tmp_path}/results.json" in text and "NVIDIA H100 80GB HBM3" in text
    assert "| ch07:copy" in render(record, "markdown")
    as_json = json.loads(render(record, "json"))
    assert as_json == json.loads(json.dumps(record.to_dict()))
    again = RunRecord.from_dict(as_json)
    assert [row(ex) for ex in again.rows] == [row(ex) for ex in record.rows]


def test_a_smoke_run_has_one_line_for_its_few_samples_and_says_nothing_of_gating(tmp_path):
    """A CPU smoke run of ch03 ch05 printed a NOISY note for every row ("only 3 samples") and
    "so it is gated with a 25% tolerance" for rows nothing gates; its closing line says both."""
    def feeder():
        ex = make_example("feeder", 1.0, 0.9)
        ex.noisy, ex.cpu_bound = "only 3 samples", "the host collates every batch"
        return ex

    smoke = render(make_record([feeder()], tmp_path, options={"mode": "smoke"}), "table")
    assert "NOISY ch07" not in smoke and "smoke run: times come from few samples" in smoke
    cpu_bound = next(line for line in smoke.splitlines() if line.startswith("CPU-BOUND ch07:feeder"))
    assert cpu_bound.endswith("as much as on the GPU") and "gated" not in cpu_bound
    full = render(make_record([feeder()], tmp_path, options={"mode": "full"}), "table")
    assert "NOISY ch07:feeder: only 3 samples" in full and "gated with a 25% tolerance" in full


def test_row_of_a_measured_example_without_rates_or_interval():
    ex = make_example("copy", 1.0, 0.5)
    ex.timing.rates, ex.speedup_ci, ex.expectation, ex.verification = None, None, None, None
    cells = row(ex)
    assert cells[3].startswith("2.00x [2.00-2.00]") and cells[4:] == ["-", "-", "ok", "-"]


def test_throttle_notes_read_pair_clocks():
    hot = PairResult(pair="ch07:x", clocks_start={"temperature_c": 40},
                     clocks_end={"throttle_reasons": 0x20 | 0x1, "sm_clock_mhz": 1200,
                                 "temperature_c": 88})
    idle = PairResult(pair="ch07:y", clocks_end={"throttle_reasons": 0x1})
    lines = throttle_notes([hot, idle, PairResult(pair="ch07:z")])
    assert len(lines) == 1 and "software thermal slowdown" in lines[0] and "1200 MHz" in lines[0]


def test_a_pair_over_the_budget_is_noted_slow_unless_its_baseline_says_why(tmp_path):
    record = make_record([make_example("fast", 2, 1), make_example("slow", 2, 1),
                          make_example("why", 2, 1), make_example("broken", 2, 1, status="failed")],
                         tmp_path, options={"mode": "full"})
    for pair, seconds in zip(record.pairs, (PAIR_BUDGET_S - 1, 271, 113, 400)):
        pair.duration_s = seconds
    record.pairs[2].slow_because = "two cold compiles per side"
    lines = slow_notes(record)
    assert len(lines) == 1 and lines[0].startswith("SLOW ch07:slow: 271 s") and "slow_because" in lines[0]
    assert lines[0] in render(record)
    record.options["profile"] = "deep"  # ncu replays each kernel: the profiler's time, not the pair's
    assert slow_notes(record) == []
    record.options.update(profile=None, mode="smoke")  # shrunk shapes: not the budget's
    assert slow_notes(record) == []
    again = PairResult.from_dict(record.pairs[2].to_dict())
    assert again.slow_because == "two cold compiles per side"


# --- compare --------------------------------------------------------------------------------

def test_verdicts():
    old = [1.0 + 0.001 * (i % 7) for i in range(60)]
    assert verdict(old, [x * 1.3 for x in old])[0] == "slower"
    assert verdict(old, [x * 0.7 for x in old])[0] == "faster"
    assert verdict(old, list(old))[0] == "same"
    noisy = [1.0 + 0.5 * ((i * 37) % 11) / 10 for i in range(8)]
    assert verdict(noisy, [x * 1.06 for x in noisy])[0] == "inconclusive"


def test_compare_runs_flags_slower_and_newly_failed(tmp_path):
    old = make_record([make_example("a", 1.0, 0.5), make_example("b", 1.0, 0.5),
                       make_example("c", 1.0, 0.5), make_example("e", 1.0, 0.5)], tmp_path)
    new = make_record([make_example("a", 1.0, 0.5, seed=1), make_example("b", 1.0, 0.8),
                       make_example("c", 0, 0, status="failed"), make_example("d", 1.0, 0.5),
                       make_example("e", 1.0, 0.25)], tmp_path)
    rows = {r.id: r for r in compare_runs(old, new)}
    assert all(isinstance(r, CompareRow) for r in rows.values())
    assert rows["ch07:a"].verdict == "same" and not is_regression(rows["ch07:a"])
    assert rows["ch07:b"].verdict == "slower" and is_regression(rows["ch07:b"])
    assert rows["ch07:b"].ratio_ci[0] > 1.05
    assert rows["ch07:b"].old_ms == pytest.approx(0.5, rel=0.02)
    assert rows["ch07:b"].new_ms == pytest.approx(0.8, rel=0.02)
    assert rows["ch07:b"].new_speedup == pytest.approx(1.25, rel=0.04)
    assert rows["ch07:c"].verdict == "failed" and is_regression(rows["ch07:c"])
    assert rows["ch07:c"].reason == "verification failed: boom" and rows["ch07:c"].ratio_ci is None
    assert rows["ch07:d"].verdict == "only in new run" and not is_regression(rows["ch07:d"])
    assert rows["ch07:e"].verdict == "faster" and not is_regression(rows["ch07:e"])
    assert rows["ch07:d"].to_dict() == {"id": "ch07:d", "verdict": "only in new run"}
    assert set(rows["ch07:b"].to_dict()) == {"id", "verdict", "ratio_ci", "old_ms", "new_ms",
                                             "old_speedup", "new_speedup"}


def test_compare_reads_back_what_a_run_wrote(tmp_path):
    old = make_record([make_example("a", 1.0, 0.5), make_example("c", 0, 0, status="failed")],
                      tmp_path)
    path = _write_run(tmp_path / "old", old)
    loaded = load_run(path)
    assert isinstance(loaded, RunRecord) and [ex.id for ex in loaded.rows] == ["ch07:a", "ch07:c"]
    a = loaded.rows[0]
    assert a.timing.stats.samples == old.rows[0].timing.stats.samples
    assert a.baseline is loaded.pairs[0].baseline and a.expectation.status == "pass"
    assert [r.verdict for r in compare_runs(old, loaded)] == ["same", "not measured"]


def test_compare_reads_results_written_before_the_typed_record(tmp_path):
    # then an example kept its optimized stats/workload/rates at its own top level
    record = make_record([make_example("a", 1.0, 0.5)], tmp_path)
    data = record.to_dict()
    ex = data["pairs"][0]["examples"][0]
    timing = ex.pop("timing")
    ex.update(stats=timing["stats"], workload=timing["workload"], rates=timing["rates"],
              baseline_ms=1.0, optimized_ms=0.5)
    (tmp_path / "results.json").write_text(json.dumps(data))
    [row_] = compare_runs(load_run(tmp_path), record)
    assert row_.verdict == "same" and row_.old_ms == pytest.approx(0.5, rel=0.02)


def test_load_run_names_the_file_when_unusable(tmp_path):
    with pytest.raises(ValueError, match="no results.json"):
        load_run(tmp_path / "nope")
    (tmp_path / "results.json").write_text("{oops")
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'results.json'}: not valid JSON")):
        load_run(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"run_dir": "x"}))
    with pytest.raises(ValueError, match="no 'pairs'"):
        load_run(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"pairs": [{"examples": []}]}))
    with pytest.raises(ValueError, match=r"results\.json: not a results\.json of `bench run`"):
        load_run(tmp_path / "results.json")


def _write_run(path: Path, record: RunRecord | list[ExampleResult]) -> Path:
    path.mkdir(parents=True)
    if not isinstance(record, RunRecord):
        record = make_record(record, path)
    (path / "results.json").write_text(json.dumps(record.to_dict()))
    return path


def test_bench_compare_cli_exit_codes(tmp_path):
    runner = CliRunner()
    old = _write_run(tmp_path / "old", [make_example("a", 1.0, 0.5)])
    same = _write_run(tmp_path / "same", [make_example("a", 1.0, 0.5, seed=3)])
    slow = _write_run(tmp_path / "slow", [make_example("a", 1.0, 0.9)])
    ok = runner.invoke(app, ["bench", "compare", str(old), str(same)])
    assert ok.exit_code == 0 and "same" in ok.output
    bad = runner.invoke(app, ["bench", "compare", str(old), str(slow / "results.json")])
    assert bad.exit_code == 1 and "slower" in bad.output
    missing = runner.invoke(app, ["bench", "compare", str(old), str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no results.json" in missing.output
    as_json = runner.invoke(app, ["bench", "compare", str(old), str(slow), "--format", "json"])
    assert as_json.exit_code == 1
    [entry] = json.loads(as_json.stdout)
    assert entry["id"] == "ch07:a" and entry["verdict"] == "slower"
    assert entry["new_ms"] == pytest.approx(0.9, rel=0.02) and len(entry["ratio_ci"]) == 2


def test_histograms_put_both_runs_on_the_same_bins():
    from core.compare import histogram_lines

    fast = [1.0 + 0.01 * (i % 5) for i in range(100)]
    slow = [x * 1.5 for x in fast]
    old_row, new_row, axis = histogram_lines(fast, slow, bins=20)
    old_bars, new_bars = old_row.split("|")[1], new_row.split("|")[1]
    assert len(old_bars) == len(new_bars) == 20
    # the old samples fill the left end only, the slower new ones the right end only
    assert old_bars.rstrip() and not old_bars[10:].strip() and not new_bars[:10].strip()
    assert "█" in old_bars and "█" in new_bars and "n=100" in old_row
    assert axis.split()[0] == "1.0000" and histogram_lines([], slow) == []


def test_bench_compare_histograms(tmp_path):
    old = _write_run(tmp_path / "old", [make_example("a", 1.0, 0.5)])
    slow = _write_run(tmp_path / "slow", [make_example("a", 1.0, 0.9)])
    out = CliRunner().invoke(app, ["bench", "compare", str(old), str(slow), "--histograms"])
    assert out.exit_code == 1, out.output  # slower, as without --histograms
    assert "ch07:a (optimized side's samples)" in out.output
    assert "  old |" in out.output and "  new |" in out.output


# --- profiler commands ------------------------------------------------------------------------

def test_ncu_command_filters_to_the_timed_range_with_clock_control_none(tmp_path):
    cmd = profiling.ncu_command(tmp_path / "b.ncu-rep", "copy_vectorized",
                                ["--profile-side", "spec.json", "copy_vectorized"], ncu="/x/ncu")
    assert cmd[0] == "/x/ncu"
    assert cmd[cmd.index("--nvtx-include") + 1] == "aisp_copy_vectorized_timed/"
    assert "--nvtx" in cmd and cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--replay-mode") + 1] == "kernel"
    assert cmd[cmd.index("--export") + 1] == str(tmp_path / "b.ncu-rep")
    assert cmd[-5:] == ["-m", "core.toolchild", "--profile-side", "spec.json", "copy_vectorized"]
    app_cmd = profiling.ncu_command(tmp_path / "r", "s", [], replay_mode="application",
                                    clock_control="base")
    assert app_cmd[app_cmd.index("--replay-mode") + 1] == "application"
    assert app_cmd[app_cmd.index("--clock-control") + 1] == "base"


def test_ncu_summary_parsing_handles_units_and_log_lines():
    text = "\n".join([
        "==PROF== Connected to process 123",
        '"ID","Kernel Name","gpu__time_duration.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed",'
        '"sm__throughput.avg.pct_of_peak_sustained_elapsed","sm__warps_active.avg.pct_of_peak_sustained_active",'
        '"launch__waves_per_multiprocessor"',
        '"","","usecond","%","%","%",""',
        '"0","copy_float4(const float4 *, float4 *, long)","182.50","92.31","12.50","88.10","0.45"',
        '"1","copy_float4(const float4 *, float4 *, long)","1,182.00","n/a","12.50","88.10","n/a"'])
    kernels = profiling.parse_ncu_csv(text)
    assert kernels[0] == {"kernel": "copy_float4(const float4 *, float4 *, long)",
                          "duration_us": 182.5, "dram_pct": 92.31, "sm_pct": 12.5,
                          "achieved_occupancy_pct": 88.1, "waves": 0.45}
    assert kernels[1]["duration_us"] == 1182.0 and "dram_pct" not in kernels[1]
    assert profiling.parse_ncu_csv("==ERROR== nothing") == []


def test_nsys_command_traces_cuda_and_nvtx(tmp_path):
    cmd = profiling.nsys_command(tmp_path / "rep", ["--profile-side", "s.json", "baseline"], nsys="nsys")
    assert cmd[:2] == ["nsys", "profile"] and "cuda,nvtx" in cmd and str(tmp_path / "rep") in cmd


def test_range_names_are_plain():
    assert profiling.range_name("copy_vectorized", "timed") == "aisp_copy_vectorized_timed"


# --- progress and hw peak on CPU ----------------------------------------------------------------

def _events():
    from core.events import Note, PairFinished, PairStarted

    pair = make_record([make_example("x", 1.0, 0.5)], Path(".")).pairs[0]
    pair.duration_s = 2.5
    return [PairStarted(1, 2, "ch07:x"), PairFinished(1, 2, pair), Note("building ch07 [sm_90]"),
            PairFinished(2, 2, PairResult(pair="ch07:y"), kept=True)]


def test_progress_quiet_and_plain(capsys):
    from cli.progress import suite_progress

    with suite_progress(2, quiet=True) as listen:
        for event in _events():
            listen(event)
    assert capsys.readouterr().err == ""
    with suite_progress(2) as listen:  # stderr is not a terminal under pytest: plain lines
        for event in _events():
            listen(event)
    assert capsys.readouterr().err.splitlines() == [
        "[1/2] ch07:x ...", "      x: ok (2.5 s)", "building ch07 [sm_90]",
        "[2/2] ch07:y: kept from the resumed run"]


def test_progress_says_how_long_the_rest_may_take_at_the_pace_so_far(capsys):
    from cli.progress import suite_progress
    from core.events import PairFinished, PairStarted

    now = [0.0]
    pair = PairResult(pair="ch07:x", duration_s=10.0)
    with suite_progress(4, clock=lambda: now[0]) as listen:
        listen(PairFinished(1, 4, PairResult(pair="ch07:kept"), kept=True))  # took no time
        listen(PairStarted(2, 4, "ch07:x"))
        now[0] = 10.0
        listen(PairFinished(2, 4, pair))
        listen(PairStarted(3, 4, "ch07:y"))  # one measured pair in 10 s; two to go
    lines = capsys.readouterr().err.splitlines()
    assert lines[1] == "[2/4] ch07:x ..."  # nothing measured yet: no estimate
    assert lines[3] == "[3/4] ch07:y ... (about 20.0 s left)"


def test_progress_bar_on_a_terminal(monkeypatch):
    import io

    import rich.console
    import rich.progress

    from cli import progress

    buffer, console = io.StringIO(), rich.console.Console
    tty = type("Tty", (io.StringIO,), {"isatty": lambda self: True})
    monkeypatch.setattr(progress.sys, "stderr", tty())
    monkeypatch.setattr(rich.console, "Console", lambda **kw: console(
        file=buffer, force_terminal=True, width=120, color_system=None))
    descriptions = []
    update = rich.progress.Progress.update
    monkeypatch.setattr(rich.progress.Progress, "update", lambda self, task, **kw: (
        descriptions.append(kw.get("description")), update(self, task, **kw))[1])
    with progress.suite_progress(2) as listen:
        for event in _events():
            listen(event)
    assert "ch07:x" in descriptions
    out = buffer.getvalue()
    assert "x: ok (2.5 s)" in out and "building ch07 [sm_90]" in out  # markup left alone
    assert "kept from the resumed run" in out and "[1/2] ch07:x ..." not in out


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="asserts the CPU message")
def test_hw_peak_without_gpu_says_so():
    result = CliRunner().invoke(app, ["hw", "peak"])
    assert result.exit_code == 1 and "needs a CUDA GPU" in result.output


def test_profile_minimal_runs_every_side_on_cpu(make_chapter, fake_root, tmp_path):
    """--profile minimal on the v2 contract: a torch.profiler trace per side, from the
    baseline's inputs, in a child process apart from the timing run."""
    from core.discovery import select
    from core.runner import RunOptions, run_suite
    from tests.conftest import GOOD_RUN, vec_chapter_files, vec_pair_file

    make_chapter("ch93", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    options = RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs", profile="minimal")
    record = run_suite(select(["ch93"], root=fake_root), options)
    profile = record.pairs[0].profile
    assert "minimal_error" not in profile, profile.get("minimal_error")
    assert set(profile["sides"]) == {"baseline", "vec"}
    for side in profile["sides"].values():
        assert Path(side["trace"]).exists() and side["top"]


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="asserts the CPU message")
def test_profile_memory_on_cpu_is_skipped_with_the_reason(make_chapter, fake_root, tmp_path):
    from core.discovery import select
    from core.runner import RunOptions, run_suite
    from tests.conftest import GOOD_RUN, vec_chapter_files, vec_pair_file

    make_chapter("ch93", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    options = RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs", profile="memory")
    record = run_suite(select(["ch93"], root=fake_root), options)
    profile = record.pairs[0].profile
    assert profile["status"] == "skipped" and "need a CUDA device" in profile["reason"]
    assert "skipped: allocator snapshots need a CUDA device" in summary_markdown(record)


def test_top_allocation_sites_are_those_holding_the_peak():
    """Sites are the first frame outside torch; ranked by what they held when the replayed
    history peaked, not by what they allocated over time."""
    def frames(line, name):
        return [{"filename": "/site-packages/torch/nn/functional.py", "line": 1, "name": "linear"},
                {"filename": "/repo/ch13/_pair_common.py", "line": line, "name": name}]

    def alloc(addr, size, line, name):
        return {"action": "alloc", "addr": addr, "size": size, "frames": frames(line, name)}

    history = [alloc(1, 100, 10, "weights"), alloc(2, 300, 20, "activation"),
               {"action": "free_requested", "addr": 2}, {"action": "free_completed", "addr": 2},
               *[alloc(10 + i, 50, 30, "scratch") for i in range(4)],  # 200 in all, after the peak
               ]
    sites = profiling.top_sites({"device_traces": [history]})
    assert sites == [{"site": "ch13/_pair_common.py:20 activation", "bytes": 300},
                     {"site": "ch13/_pair_common.py:10 weights", "bytes": 100}]


def test_an_optimized_side_that_pays_up_front_says_what_it_paid():
    from core.report import notes

    compiled = make_example("compiled", 2.0, 1.0)
    compiled.baseline.setup_s, compiled.timing.setup_s = 0.4, 31.5  # torch.compile in setup()
    same = make_example("same", 2.0, 1.0)
    same.baseline.setup_s, same.timing.setup_s = 0.4, 0.9
    lines = notes([compiled, same])
    assert "SETUP ch07:compiled: setup() took 0.4 s → 31.5 s" in "\n".join(lines)
    assert not any("ch07:same" in line for line in lines)


def test_the_table_ends_with_where_the_time_went(tmp_path):
    from core.record import IntegrityReport

    record = make_record([make_example("a", 2.0, 1.0)], tmp_path)
    record.pairs = [PairResult(pair="ch90:fast", duration_s=3.0),
                    PairResult(pair="ch90:slow", duration_s=178.0,
                               integrity=IntegrityReport(verify_s=10.4, checks_s=13.0, fresh_s=20.0,
                                                         state_setup_s=18.0, timing_s=41.2)),
                    PairResult(pair="ch90:gone", status="skipped", duration_s=0.0),
                    PairResult(pair="ch90:mid", duration_s=50.0)]
    record.wall_s = 250.0
    line = next(l for l in render(record).splitlines() if l.startswith("time: "))
    assert line.startswith("time: 4 min 10 s for 3 pairs run (3 min 51 s in pairs")
    assert line.index("ch90:slow 178 s (verify 10, checks and fresh inputs 33, 18 of them "
                      "re-running setup() for state checks, timing 41)") < line.index("ch90:mid") \
        < line.index("ch90:fast")
    assert "ch90:gone" not in line
    record.wall_s = 0.0  # a results.json written before runs kept their wall time
    assert "time: " not in render(record)
    assert RunRecord.from_dict(json.loads(json.dumps({**record.to_dict(), "wall_s": 9.5}))).wall_s == 9.5


def test_nvtx_ranges_work_without_the_nvtx_package(monkeypatch):
    import sys

    import torch

    from core.profiling import nvtx_range

    monkeypatch.setitem(sys.modules, "nvtx", None)  # not installed (the GPU machines lack it)
    pushed = []
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda name: pushed.append(name))
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: pushed.append("pop"))
    with nvtx_range("aisp_x_timed"):
        pushed.append("inside")
    assert pushed == ["aisp_x_timed", "inside", "pop"]  # torch.cuda.nvtx marked the range

    def cpu_build(name):
        raise RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build?")
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", cpu_build)
    with nvtx_range("aisp_x_timed"):  # a CPU build: nothing to mark, no error
        pass


def test_bench_compare_finds_the_saved_runs_itself(tmp_path):
    runner = CliRunner()
    runs = tmp_path / "runs"
    first = _write_run(runs / "20261127-100000", [make_example("a", 1.0, 0.5)])
    _write_run(runs / "20261127-110000", [make_example("a", 1.0, 0.5, seed=3)])
    latest = _write_run(runs / "20261127-120000", [make_example("a", 1.0, 0.9)])
    (runs / "20261127-130000").mkdir()  # an interrupted run with no results.json: not a run
    last_two = runner.invoke(app, ["bench", "compare", "--runs-dir", str(runs)])
    assert last_two.exit_code == 1 and "slower" in last_two.output  # 11:00 against 12:00
    assert f"comparing {runs / '20261127-110000'} (older) with {latest}" in last_two.output
    by_id = runner.invoke(app, ["bench", "compare", "20261127-100000", "--runs-dir", str(runs)])
    assert by_id.exit_code == 1 and f"comparing {first} (older) with {latest}" in by_id.output
    alone = tmp_path / "alone"
    _write_run(alone / "20261127-100000", [make_example("a", 1.0, 0.5)])
    short = runner.invoke(app, ["bench", "compare", "--runs-dir", str(alone)])
    assert short.exit_code == 2 and "1 saved run to compare with, 2 needed" in short.output


def test_speedup_chart_grows_bars_from_1x_and_marks_what_is_not_a_failure(tmp_path, monkeypatch):
    from matplotlib.patches import Rectangle

    from core import plots
    from core.report import chart_context

    faster, slower = make_example("fast", 1.0, 0.5), make_example("slow", 1.0, 1.25)
    negative = make_example("neg", 1.0, 1.1)
    negative.negative_result = "slower here by design"
    teaching, noisy = make_example("naive", 1.0, 0.1, teaching=True), make_example("few", 1.0, 0.8)
    noisy.noisy = "only 3 samples"
    assert [plots._kind(r) for r in (faster, slower, negative, teaching)] == [
        "faster", "slower", "negative", "teaching"]
    same = make_example("same", 1.0, 1.01)  # 0.99x [0.97-1.01]: not a slowdown it can show
    assert plots._kind(same) == "even" and plots._KINDS["even"][1] == "interval spans 1x"
    kept = []
    monkeypatch.setattr(plots.plt, "close", kept.append)
    plots.speedups([faster, slower, negative, teaching, noisy], tmp_path / "s.png", "H100 · commit abc")
    ax = kept[0].axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_height() < 1]
    assert len(bars) == 5 and all(b.get_x() == 1.0 for b in bars)  # from 1x, left when slower
    lo, hi = ax.get_xlim()
    assert abs(lo * hi - 1) < 1e-9  # centred on 1x
    assert "H100 · commit abc" in ax.get_title()
    assert "ch07:few (noisy)" in [t.get_text() for t in ax.get_yticklabels()]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "declared negative result" in legend and "teaching" in legend
    smoke = make_record([faster], tmp_path, options={"mode": "smoke"})
    assert "smoke run: few samples, not gated" in chart_context(smoke)
    assert "NVIDIA H100 80GB HBM3" in chart_context(smoke)
    assert "GPUs" not in chart_context(smoke)  # one GPU: nothing to say
    four = make_record([faster], tmp_path, options={"mode": "full", "gpus": 4})
    assert chart_context(four).startswith("NVIDIA H100 80GB HBM3 · multi-GPU pairs on 4 GPUs · commit")


def test_speedup_chart_shows_a_pair_by_the_ratio_its_goal_gates(tmp_path, monkeypatch):
    """ch13:fsdp (goal memory: 2.73x less memory, time 0.95x) was drawn as a 0.95x bar in the
    'slower, undeclared' colour. A pair gated on another goal shows that goal's ratio, named,
    with its stored value's tick; where the run did not measure it, its time, saying so."""
    from core import goals, plots
    from core.memory import Footprint

    shard = make_example("shard", 1.0, 1.05)  # 0.95x time
    shard.goal = "memory"
    shard.baseline.memory, shard.timing.memory = Footprint(300, 100), Footprint(100, 60)  # 2.5x
    shard.expectation = GateResult("pass", "pass message", stored_speedup=2.4, floor=2.0)
    unmeasured = make_example("cpu_shard", 1.0, 1.05)
    unmeasured.goal = "memory"  # a CPU run: no footprints
    assert plots._kind(shard) == "faster" and plots._kind(unmeasured) == "slower"
    fig = _drawn(monkeypatch, lambda: plots.speedups([shard, unmeasured], tmp_path / "s.png"))
    ax = fig.axes[0]
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert names == ["ch07:cpu_shard (time; memory not measured)", "ch07:shard (less memory)"]
    assert [t.get_text() for t in ax.texts] == ["0.95x", "2.50x"]
    ticks = [line.get_xdata()[0] for line in ax.lines if len(line.get_xdata()) == 2
             and line.get_xdata()[0] == line.get_xdata()[1] != 1.0]
    assert ticks == [2.4]  # the stored memory ratio; none for the row drawn by its time
    served = make_example("serving", 1.0, 0.9)  # goodput over a baseline that met no SLO: inf
    served.goal = "goodput"
    monkeypatch.setattr(type(goals.goal_of("goodput")), "ratio", lambda self, ex: float("inf"))
    assert plots._bar(served).words == " (time; the baseline's goodput was 0)"


def test_a_host_paced_result_stored_on_another_host_says_so():
    from core.report import notes
    from core.expectations import other_host

    ex = make_example("feeder", 1.0, 0.5)
    ex.cpu_bound = "the host collates every batch"
    entry = {"speedup": 2.0, "provenance": {"cpu": "AMD EPYC 9454", "cpu_cores": 16}}
    here = {"cpu": "Intel Xeon 8480", "cpu_cores": 16}
    ex.other_host = other_host(ex, entry, here)
    assert ex.other_host == "stored on AMD EPYC 9454 (16 cores), this run on Intel Xeon 8480 (16 cores)"
    assert any(line.startswith("OTHER HOST ch07:feeder: its expectation was stored on AMD EPYC 9454")
               for line in notes([ex]))
    assert other_host(ex, entry, {"cpu": "AMD EPYC 9454", "cpu_cores": 16}) == ""  # same host
    gpu_paced = make_example("gemm", 1.0, 0.5)  # neither cpu_bound nor host-bound: no note
    assert other_host(gpu_paced, entry, here) == ""
    assert other_host(ex, {"speedup": 2.0}, here) == ""  # stored before hosts were recorded
    replayed = make_example("serving", 1.0, 1.0)  # goodput from a real-time replay: host-paced
    replayed.goal = "goodput"
    assert other_host(replayed, entry, here).startswith("stored on AMD EPYC 9454")
    replayed.simulated = "a model of the cluster"  # virtual time: the host sets no pace
    assert other_host(replayed, entry, here) == ""
    cold = make_example("compile", 1.0, 1.0)  # a compiler's cold start runs on the host
    cold.goal = "compile_time"
    assert other_host(cold, entry, here).startswith("stored on AMD EPYC 9454")
    assert ExampleResult.from_dict(ex.to_dict()).other_host == ex.other_host


def _drawn(monkeypatch, draw) -> "matplotlib.figure.Figure":
    """The figure `draw()` saved (core.plots closes it; kept open here to measure)."""
    from core import plots

    kept = []
    monkeypatch.setattr(plots.plt, "close", kept.append)
    draw()
    return kept[0]


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("ratios", [(0.95, 1.1, 3.0), (0.34, 16.3), (0.05, 20.0), (0.52, 8913.0),
                                    (1e-4, 1e5), tuple(0.3 + i / 8 for i in range(40))],
                         ids=["3 rows", "cpu smoke", "20x", "teaching 8913x", "9 decades", "40 rows"])
def test_speedup_chart_labels_never_collide(tmp_path, monkeypatch, ratios):
    """The x ticks read `20x30x50x` with three rows, and `0.0001x0.0002x...` beside the 8913x
    of ch06:add; the legend covered the x label."""
    from core import plots

    rows = [make_example(f"continuous_batching_multigpu_round_robin_{i}", 1.0, 1 / r, seed=i)
            for i, r in enumerate(ratios)]
    rows[0].noisy, rows[-1].negative_result = "only 3 samples", "slower by design"
    fig = _drawn(monkeypatch, lambda: plots.speedups(rows, tmp_path / "s.png", "H100 · commit abc"))
    ax, renderer = fig.axes[0], fig.canvas.get_renderer()
    lo, hi = ax.get_xlim()
    ticks = [t for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi]
    assert "1x" in [t.get_text() for t in ticks]
    boxes = [t.get_window_extent(renderer) for t in ticks]
    assert not any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), \
        [t.get_text() for t in ticks]
    names = [t.get_window_extent(renderer) for t in ax.get_yticklabels()]
    assert not any(_overlap(a, b) for a, b in zip(names, names[1:]))
    frame = ax.get_window_extent(renderer)
    for value in ax.texts:  # each bar's value, past its interval: inside the axes
        box = value.get_window_extent(renderer)
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1, value.get_text()
    legend = ax.get_legend().get_window_extent(renderer)
    for other in (frame, ax.xaxis.label.get_window_extent(renderer), ax.title.get_window_extent(renderer)):
        assert not _overlap(legend, other)


def test_roofline_reads_in_greyscale(tmp_path, monkeypatch):
    """Roofs in black told apart by their dashes (ten cycling colours clashed with them);
    each pair's point a colour and a marker no other pair has; the memory-only bars filled
    (optimized) and open (baseline), as the points are: green and grey were one grey."""
    from matplotlib.colors import to_rgb

    from core import plots

    gemms = [make_example(f"gemm{i}", 10.0, 5.0, flops=1e11 * (i + 1), bytes_=1e9, seed=i)
             for i in range(14)]
    long = "continuous_batching_multigpu_round_robin"  # the longest id: the narrowest axes
    copies = [make_example(f"{long}_copy", 1.0, 0.5), make_example(f"{long}_gather", 1.0, 0.8),
              make_example(f"{long}_in_l2", 1.0, 0.0057)]  # 175000 GB/s: 6-digit tick labels
    fig = _drawn(monkeypatch, lambda: plots.roofline(gemms + copies, CEILINGS, tmp_path / "r.png",
                                                     "H100 · commit abc"))
    left, right = fig.axes
    assert "H100 · commit abc" in left.get_title()
    roofs = [line for line in left.get_lines() if "roof" in line.get_label()]
    assert len(roofs) == 2 and all(to_rgb(r.get_color()) == (0, 0, 0) for r in roofs)
    assert len({r.get_linestyle() for r in roofs}) == 2
    points = [(tuple(to_rgb(c.get_facecolor()[0][:3])), c.get_paths()[0].vertices.tobytes())
              for c in left.collections if c.get_label().startswith("ch07:")]
    assert len(points) == 14 and len(set(points)) == 14

    def grey(patch) -> float:
        r, g, b = to_rgb(patch.get_facecolor())
        return 0.299 * r + 0.587 * g + 0.114 * b

    optimized, baseline = (c for c in right.containers)
    assert all(abs(grey(o) - grey(b)) > 0.3 for o, b in zip(optimized, baseline))
    renderer = fig.canvas.get_renderer()
    lo, hi = right.get_xlim()
    ticks = [t.get_window_extent(renderer) for t in right.get_xticklabels()
             if lo <= t.get_position()[0] <= hi]
    assert not any(_overlap(a, b) for a, b in zip(ticks, ticks[1:]))  # read 100000125000...


def test_roofline_names_the_pairs_it_cannot_place(tmp_path, monkeypatch):
    """FLOPs without a byte count have no arithmetic intensity (9 H200 entries: ch14
    model_compile, flex_attention, ...): they were left off the chart without a word."""
    from core import plots

    gemm = make_example("gemm", 10.0, 5.0, flops=1e11, bytes_=1e9)
    model = make_example("model_compile", 10.0, 5.0, flops=1e11, bytes_=0.0)
    fig = _drawn(monkeypatch, lambda: plots.roofline([gemm, model], CEILINGS, tmp_path / "r.png"))
    left = fig.axes[0]
    said = " ".join(t.get_text() for t in left.texts)
    assert "not placed (FLOPs but no byte count): ch07:model_compile" in said
    assert "ch07:gemm" not in said


def test_tools_roofline_titles_its_chart_with_the_device_and_commit(tmp_path, monkeypatch):
    from core import plots

    record = make_record([make_example("gemm", 10.0, 5.0, flops=1e11, bytes_=1e9)], tmp_path)
    record.fingerprint["git_commit"] = "abc1234"
    (tmp_path / "results.json").write_text(json.dumps(record.to_dict()))
    fig = _drawn(monkeypatch, lambda: CliRunner().invoke(app, ["tools", "roofline", str(tmp_path)],
                                                         catch_exceptions=False))
    assert "NVIDIA H100 80GB HBM3 · commit abc1234" in fig.axes[0].get_title()  # it had neither


def test_a_run_without_memory_only_pairs_leaves_that_panel_blank(tmp_path, monkeypatch):
    """A title over an empty panel read as if its pairs were missing (ch04 on 4xH200)."""
    from core import plots

    gemm = make_example("gemm", 10.0, 5.0, flops=1e11, bytes_=1e9)
    fig = _drawn(monkeypatch, lambda: plots.roofline([gemm], CEILINGS, tmp_path / "r.png"))
    assert fig.axes[1].get_title() == "" and not fig.axes[1].axison

