"""Results the table must not present as facts: noisy speedups, host-bound sides, gates that
cannot fail, resumed runs of another selection, comparisons across machines."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.aisp import app
from core import gate as verdict
from core.benchmark import Workload
from core.compare import comparable, compare_runs, environment_differences
from core.discovery import Pair, select
from core.hardware import cpu_key, fingerprint
from core.record import ExampleResult, PairResult, RunRecord, SideResult
from core.report import notes, row
from core.runner import ResumeError, RunOptions, annotate, run_suite, write_expectations
from core.stats import summarize
from tests.conftest import GOOD_RUN, vec_chapter_files, vec_pair_file
from core.goals import ratio_of


def side(ms: float, n: int = 20, spread: float = 0.0, host_ms: float | None = None) -> SideResult:
    samples = [ms * (1 + spread * ((i % 5) - 2) / 2) for i in range(n)]
    return SideResult(summarize(samples), Workload(bytes=1e6), host_ms=host_ms)


def pair_result(base: SideResult, opt: SideResult, interval: tuple[float, float],
                name: str = "x", negative: str = "", stop: str = "median known to ±0.5%") -> PairResult:
    ex = ExampleResult(name=name, id=f"ch90:{name}", file=f"ch90/optimized_{name}.py",
                       timing=opt, speedup=base.stats.median / opt.stats.median,
                       speedup_ci=interval, negative_result=negative)
    return PairResult(pair=f"ch90:{name}", baseline=base, examples=[ex], stop_reason=stop)


PAIR = Pair("ch90", "x", Path("ch90/baseline_x.py"))


# --- noisy results ---------------------------------------------------------------------------

@pytest.mark.parametrize("n, interval, why", [
    (3, (1.9, 2.1), "only 3 samples"),                 # --iterations 3
    (50, (0.02, 55.92), "wider than ±5%"),             # the time-capped 0.66x [0.02-55.92]
    (50, (0.31, 41.2), "wider than ±5%"),              # stored once on a busy CPU box
])
def test_noisy_results_are_flagged_and_never_stored(tmp_path, n, interval, why):
    result = pair_result(side(2.0, n), side(1.0, n), interval, stop="time cap (4 s)")
    annotate(result, PAIR, {}, {})
    ex = result.examples[0]
    assert why in ex.noisy
    assert "NOISY" in row(ex)[3] and any(line.startswith("NOISY ch90:x") for line in notes([ex]))
    chapter = tmp_path / "ch90"
    chapter.mkdir()
    record = RunRecord(tmp_path, {}, {}, [result])
    write_expectations(record, [(Pair("ch90", "x", chapter / "baseline_x.py"), [])], "h100")
    assert not (chapter / "expectations_h100.json").exists()
    assert record.expectation_skips and why in record.expectation_skips[0]


@pytest.mark.parametrize("negative", ["", "the baseline's library kernel already saturates HBM"])
def test_a_slower_optimized_side_is_stored_only_as_a_declared_negative_result(tmp_path, negative):
    """0.93x stored without negative_result would gate every later run at a 1.0x floor and
    fail it forever: refused, with the fix named; declared, it is stored (and not gated)."""
    result = pair_result(side(1.0), side(1.075), (0.92, 0.94), negative=negative)
    annotate(result, PAIR, {}, {})
    chapter = tmp_path / "ch90"
    chapter.mkdir()
    record = RunRecord(tmp_path, {}, {}, [result])
    write_expectations(record, [(Pair("ch90", "x", chapter / "baseline_x.py"), [])], "h100")
    stored = chapter / "expectations_h100.json"
    if negative:
        assert stored.exists() and not record.expectation_skips
    else:
        assert not stored.exists()
        assert "declares no negative_result" in record.expectation_skips[0]
        assert "ch90/optimized_x.py" in record.expectation_skips[0]


@pytest.mark.parametrize("interval, stored", [
    ((0.9998, 1.0009), False),  # ch06 autotuning's H100 entry: both sides picked one launch
    ((0.99, 1.07), False),      # a gain in the median, but the interval reaches 1x
    ((1.02, 1.06), True),       # small but clear of 1x: a gain, stored
])
def test_a_speedup_whose_interval_reaches_below_1x_is_stored_only_as_declared(tmp_path, interval, stored):
    """A speedup at parity gates later runs at the 1.0x floor, and a run whose interval lands
    wholly below 1x fails: ch04 symmetric_memory, stored at 1.03x on 2 GPUs, measured 0.998x
    [interval below 1] on a fresh machine. Refused unless declared, like a slower side."""
    median = sum(interval) / 2
    result = pair_result(side(median), side(1.0), interval)
    annotate(result, PAIR, {}, {})
    chapter = tmp_path / "ch90"
    chapter.mkdir()
    record = RunRecord(tmp_path, {}, {}, [result])
    write_expectations(record, [(Pair("ch90", "x", chapter / "baseline_x.py"), [])], "h100")
    assert (chapter / "expectations_h100.json").exists() is stored
    if not stored:
        assert "at parity (its interval starts at" in record.expectation_skips[0]
        assert "declares no negative_result" in record.expectation_skips[0]
    declared = pair_result(side(median), side(1.0), interval, negative="parity at these shapes")
    annotate(declared, PAIR, {}, {})
    record = RunRecord(tmp_path, {}, {}, [declared])
    write_expectations(record, [(Pair("ch90", "x", chapter / "baseline_x.py"), [])], "h200")
    assert (chapter / "expectations_h200.json").exists() and not record.expectation_skips


@pytest.mark.parametrize("negative", ["", "chunking costs more than it hides at this load"])
def test_a_goodput_below_one_is_stored_only_as_a_declared_negative_result(tmp_path, negative):
    """The same rule for a variant gated on another measure: an H200 run stored a 0.98x
    goodput ratio (both sides met every SLO at that load), which would gate every later run
    at 1.0x and present no gain as an optimization."""
    from core.goodput import GoodputStats

    def replay(goodput_rps: float) -> GoodputStats:
        return GoodputStats(requests=96, duration_s=9.8, ttft_p50_s=0.04, ttft_p99_s=0.1,
                            tpot_p50_s=0.006, tpot_p99_s=0.008, tokens_per_s=800.0, met=96,
                            goodput_rps=goodput_rps)
    result = pair_result(side(1.2), side(1.0), (1.19, 1.21), negative=negative)  # time 1.2x
    ex = result.examples[0]
    ex.goal = "goodput"
    result.baseline.goodput = [replay(9.89), replay(9.90), replay(9.88)]
    ex.timing.goodput = [replay(9.75), replay(9.74), replay(9.76)]  # 0.98x, rounds agree
    annotate(result, PAIR, {}, {})
    assert ex.noisy == "" and ratio_of(ex) == pytest.approx(0.986, abs=0.002)
    chapter = tmp_path / "ch90"
    chapter.mkdir()
    record = RunRecord(tmp_path, {}, {}, [result])
    write_expectations(record, [(Pair("ch90", "x", chapter / "baseline_x.py"), [])], "h200")
    if negative:
        assert (chapter / "expectations_h200.json").exists() and not record.expectation_skips
    else:
        assert not (chapter / "expectations_h200.json").exists()
        assert "below 1x in its goodput_ratio (0.99x)" in record.expectation_skips[0]


def test_a_tight_interval_is_not_noisy():
    result = pair_result(side(2.0), side(1.0), (1.98, 2.02))
    annotate(result, PAIR, {}, {})
    assert result.examples[0].noisy == ""


# --- CPU-bound pairs ------------------------------------------------------------------------

def test_a_cpu_bound_pair_is_gated_with_the_wider_tolerance_and_says_so():
    """A pair whose time is host CPU work is gated with CPU_BOUND_TOLERANCE (its numbers move
    with the host), stored with an interval up to that wide, and marked in table and notes;
    the same numbers on an ordinary pair are a regression and too noisy to store."""
    stored = {"x": {"speedup": 5.0}}
    results = {}
    for cpu_bound in ("", "decoding on the host"):
        result = pair_result(side(4.2), side(1.0), (3.95, 4.45))  # 16% below the stored 5.0x
        result.examples[0].cpu_bound = cpu_bound
        annotate(result, PAIR, {}, stored)
        results[bool(cpu_bound)] = result.examples[0]
    ordinary, cpu = results[False], results[True]
    assert ordinary.expectation.status == "regression" and "wider than ±5%" in ordinary.noisy
    assert cpu.expectation.status == "pass" and cpu.noisy == ""
    assert cpu.expectation.floor == pytest.approx(5.0 * (1 - verdict.CPU_BOUND_TOLERANCE))
    assert "cpu-bound" in row(cpu)[3] and "cpu-bound" not in row(ordinary)[3]
    assert any(line.startswith("CPU-BOUND ch90:x: decoding on the host") for line in notes([cpu]))
    # past the wider tolerance it is still a regression, and wider intervals are still noisy
    worse = pair_result(side(3.0), side(1.0), (2.9, 3.1))
    worse.examples[0].cpu_bound = "decoding on the host"
    annotate(worse, PAIR, {}, stored)
    assert worse.examples[0].expectation.status == "regression"
    wide = pair_result(side(4.2), side(1.0), (3.6, 4.8))
    wide.examples[0].cpu_bound = "decoding on the host"
    annotate(wide, PAIR, {}, {})
    assert "wider than ±12%" in wide.examples[0].noisy


def test_stored_entries_name_the_host_cpu():
    from core.runner import expectation_entry

    result = pair_result(side(4.2), side(1.0), (4.1, 4.3))
    result.examples[0].cpu_bound = "decoding on the host"
    annotate(result, PAIR, {}, {})
    entry = expectation_entry(result.examples[0], fingerprint())
    assert entry["cpu_bound"] == "decoding on the host"
    assert "simulated" not in entry
    result.examples[0].simulated = "a fleet of replicas on measured step costs"
    # a simulated pair cannot pass for a measured one: its row, notes and stored entry say so
    assert expectation_entry(result.examples[0], fingerprint())["simulated"].startswith("a fleet")
    assert row(result.examples[0])[3].endswith("simulated")
    assert any(line.startswith("SIMULATED ch90:x") for line in notes(result.examples))
    assert entry["provenance"]["cpu"] and entry["provenance"]["cpu_cores"] >= 1


# --- host-bound sides ----------------------------------------------------------------------

def test_host_bound_side_is_named_in_the_table_and_notes():
    # the ch06 add case: a 3.6 µs kernel whose samples hold the host's 26 µs launch
    result = pair_result(side(30.0, host_ms=0.05), side(0.026, host_ms=0.025), (1150, 1160))
    annotate(result, PAIR, {}, {})
    ex = result.examples[0]
    assert ex.host_bound == ["optimized"]
    assert "host-bound" in row(ex)[3]
    assert any("HOST-BOUND ch90:x: the optimized side" in line and "timing_mode = 'graph'" in line
               for line in notes([ex]))
    ex.goal = "goodput"  # a serving engine cannot be replayed as one graph: other advice
    assert any("HOST-BOUND ch90:x" in line and "decode step in a CUDA graph" in line
               for line in notes([ex]))
    gpu_bound = pair_result(side(2.0, host_ms=0.01), side(1.0, host_ms=0.01), (1.99, 2.01))
    assert gpu_bound.examples[0].host_bound == []


def test_graph_timed_sides_are_not_host_bound_and_say_how_they_were_timed():
    # timing_mode = "graph": the samples are replays of K captured calls, no host launch in them
    base, opt = side(30.0, host_ms=0.05), side(0.0036, host_ms=0.026)
    base.graph_calls, opt.graph_calls = 1, 139
    result = pair_result(base, opt, (8300, 8400))
    result.examples[0].baseline = base
    ex = result.examples[0]
    assert ex.host_bound == [] and "graph" in row(ex)[3] and "host-bound" not in row(ex)[3]
    graph_note = [line for line in notes([ex]) if line.startswith("GRAPH ch90:x")]
    assert graph_note and "1 baseline / 139 optimized" in graph_note[0] and "26.0 µs" in graph_note[0]
    again = SideResult.from_dict(opt.to_dict())  # kept in results.json
    assert again.graph_calls == 139 and not again.host_bound


@pytest.mark.parametrize("flag", ["inplace", "stateful"])
def test_graph_timing_refuses_pairs_that_cannot_replay_calls(flag):
    from core.benchmark import Benchmark, validate

    class Pair(Benchmark):
        timing_mode = "graph"

        def make_inputs(self, seed):
            return None

        def run(self, inputs):
            return None
    bench = Pair()
    validate(bench, "ch90/x.py")  # graph alone is fine
    setattr(bench, flag, True)
    with pytest.raises(TypeError, match="ch90/x.py: timing_mode = 'graph' replays"):
        validate(bench, "ch90/x.py")


# --- gates that can fail -------------------------------------------------------------------

def test_a_pair_stored_near_one_fails_when_the_optimized_side_is_slower():
    entry = {"speedup": 1.03}  # default tolerance: floor 0.927 — a slower side used to pass
    assert verdict.gate(entry, 0.95, (0.94, 0.96)).status == "regression"
    assert verdict.gate(entry, 0.99, (0.97, 1.01)).status == "inconclusive"
    assert verdict.gate(entry, 1.02, (1.01, 1.03)).status == "pass"
    assert verdict.gate({"speedup": 2.0}, 1.85, (1.84, 1.86)).status == "pass"  # far from 1: as before


def test_below_one_needs_a_declared_negative_result():
    entry = {"speedup": 0.72}  # ch10 cluster_dsmem
    assert verdict.gate(entry, 0.72, (0.71, 0.73)).status == "regression"
    found = verdict.gate(entry, 0.72, (0.71, 0.73), negative_result="DSMEM loses to L2 here")
    assert found.status == "negative" and "DSMEM loses to L2 here" in found.message
    result = pair_result(side(1.0), side(1.4), (0.71, 0.73), negative="DSMEM loses to L2 here")
    annotate(result, PAIR, {}, {"x": entry})
    assert result.examples[0].expectation.status == "negative"
    assert RunRecord(Path("."), {}, {}, [result]).exit_code() == 0
    assert any(line.startswith("NEGATIVE ch90:x") for line in notes(result.examples))


def test_negative_result_declared_on_the_variant_reaches_the_result(in_process_root, make_chapter):
    import random

    from core.child import run_pair
    from tests.conftest import spec_for

    make_chapter("ch95", vec_chapter_files(default=vec_pair_file(
        GOOD_RUN, attrs='negative_result = "slower here: see README"')))
    (pair, examples), = select(["ch95"], in_process_root)
    result = run_pair(spec_for(pair, examples), random.Random(1))
    assert result.examples[0].negative_result == "slower here: see README"


# --- the CPU key names the CPU --------------------------------------------------------------

def test_cpu_expectations_key_names_the_model():
    assert cpu_key("AMD EPYC 9454 48-Core Processor") == "cpu_amd_epyc_9454"
    assert cpu_key("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz") == "cpu_intel_xeon_platinum_8481c"
    assert cpu_key("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz") != cpu_key("AMD EPYC 9454")


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="CPU-only fingerprint")
def test_cpu_fingerprint_uses_the_model_key():
    info = fingerprint()
    assert info["hardware_key"] == cpu_key() and info["hardware_key"].startswith("cpu_")


# --- --resume of another selection -----------------------------------------------------------

def test_resume_refuses_other_targets_or_options(make_chapter, fake_root, tmp_path):
    make_chapter("ch93", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    make_chapter("ch94", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    options = RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs")
    first = run_suite(select(["ch93"], root=fake_root), options)
    assert first.options["targets"] == ["ch93:vec"]
    results = (first.run_dir / "results.json").read_text()
    again = RunOptions(iterations=3, warmup=1, output_dir=options.output_dir, resume=first.run_dir)
    with pytest.raises(ResumeError, match="targets: it ran ch93:vec"):
        run_suite(select(["ch93", "ch94"], root=fake_root), again)
    other = RunOptions(iterations=5, warmup=1, output_dir=options.output_dir, resume=first.run_dir)
    with pytest.raises(ResumeError, match="iterations: was 3, now 5"):
        run_suite(select(["ch93"], root=fake_root), other)
    assert (first.run_dir / "results.json").read_text() == results  # nothing overwritten
    same = run_suite(select(["ch93"], root=fake_root), again)  # the same selection resumes
    assert [p.pair for p in same.pairs] == ["ch93:vec"]


def test_resume_mismatch_is_a_usage_error(make_chapter, fake_root, tmp_path, monkeypatch):
    make_chapter("ch93", vec_chapter_files(default=vec_pair_file(GOOD_RUN)))
    monkeypatch.setenv("AISP_ROOT", str(fake_root))
    out = tmp_path / "runs"
    runner = CliRunner()
    first = runner.invoke(app, ["bench", "run", "--targets", "ch93", "--iterations", "3",
                                "--warmup", "1", "--output-dir", str(out), "--format", "json"])
    assert first.exit_code == 0, first.output
    run_dir = next(out.iterdir())
    second = runner.invoke(app, ["bench", "run", "--targets", "ch93", "--iterations", "4",
                                 "--warmup", "1", "--output-dir", str(out), "--resume", str(run_dir)])
    assert second.exit_code == 2 and "iterations: was 3, now 4" in second.output


# --- bench compare across machines ------------------------------------------------------------

def _run(device: str, torch_version: str, names: list[str]) -> RunRecord:
    pairs = [pair_result(side(2.0), side(1.0), (1.98, 2.02), name=n) for n in names]
    return RunRecord(Path("."), {"device": device, "torch": torch_version}, {}, pairs)


def test_compare_names_device_and_software_differences():
    cpu, h100 = _run("cpu", "2.13.0", ["x"]), _run("NVIDIA H100 80GB HBM3", "2.11.0", ["x"])
    diffs = environment_differences(cpu, h100)
    assert any(d.startswith("device:") for d in diffs) and any(d.startswith("torch:") for d in diffs)
    assert environment_differences(h100, _run("NVIDIA H100 80GB HBM3", "2.11.0", ["y"])) == []


def test_compare_with_nothing_in_common_fails(tmp_path):
    a, b = _run("cpu", "2.13.0", ["x"]), _run("cpu", "2.13.0", ["y"])
    assert not comparable(compare_runs(a, b))
    assert comparable(compare_runs(a, _run("cpu", "2.13.0", ["x"])))
    for name, record in (("a", a), ("b", b)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(record.to_dict()))
    result = CliRunner().invoke(app, ["bench", "compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 2 and "nothing to compare" in result.output
    cross = _run("NVIDIA H100 80GB HBM3", "2.11.0", ["x"])
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "results.json").write_text(json.dumps(cross.to_dict()))
    warned = CliRunner().invoke(app, ["bench", "compare", str(tmp_path / "a"), str(tmp_path / "c")])
    assert "WARNING: the runs differ in device" in warned.output


def test_a_rate_above_the_copy_ceiling_is_called_out():
    # ch06 add under graph replay: 12 MiB stay in the 50 MB L2, 3587 GB/s vs a 3001 GB/s HBM copy
    from core.record import Rates

    base, opt = side(30.0), side(0.0035)
    opt.rates = Rates(bound="memory", gbps=3587.0, pct_of_ceiling=120.0, pct_of_copy=120.0)
    base.rates = Rates(bound="memory", gbps=0.4, pct_of_ceiling=0.01, pct_of_copy=0.01)
    ex = pair_result(base, opt, (8500, 8600)).examples[0]
    ex.baseline = base
    above = [line for line in notes([ex]) if line.startswith("ABOVE CEILING ch90:x")]
    assert len(above) == 1 and "optimized side moves 3587 GB/s, 120%" in above[0]
    opt.rates = Rates(bound="memory", gbps=2900.0, pct_of_ceiling=97.0, pct_of_copy=97.0)
    assert not [line for line in notes([ex]) if line.startswith("ABOVE CEILING")]


def test_a_rate_above_the_matmul_ceiling_is_called_out():
    # ch02 cublas on an H200: TF32 GEMM at 415 TFLOP/s against a sustained 356 TFLOP/s probe
    from core.record import Rates

    base, opt = side(22.4), side(2.65)
    opt.rates = Rates(bound="compute", tflops=415.4, ceiling="matmul_tf32_tflops",
                      pct_of_ceiling=116.9, pct_of_matmul=116.9)
    ex = pair_result(base, opt, (8.4, 8.5)).examples[0]
    ex.baseline = base
    above = [line for line in notes([ex]) if line.startswith("ABOVE CEILING ch90:x")]
    assert len(above) == 1 and "415 TFLOP/s, 117% of the tf32 matmul ceiling" in above[0]
    opt.rates = Rates(bound="compute", tflops=370.0, ceiling="matmul_tf32_tflops",
                      pct_of_ceiling=104.0, pct_of_matmul=104.0)
    assert not [line for line in notes([ex]) if line.startswith("ABOVE CEILING")]
