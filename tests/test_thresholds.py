"""Boundary tests of the harness's thresholds: each rule is driven just inside and just
outside its limit, so a limit moved by a few times (a looser tolerance, a larger escape
allowance, a rule keyed on the wrong side) fails a test here.

The limits below are the documented contract, written out here on purpose: a test that read
them back from core.* would move with a mutated constant and catch nothing.
tests/mutations.py re-runs these tests on copies of the harness with such rules broken
(`python -m tests.mutations`) and reports which mutations the tests caught.

Everything runs on tiny CPU inputs, in this process, well under a second in all.
"""
from __future__ import annotations

import random

import pytest
import torch

from core.benchmark import Tolerance
from core.child import run_pair
from core.discovery import select
from core.gate import noisy_reason
from core.integrity import EscapeStrikes, escaped_work
from core.timing import Batch
from core.verify import compare, default_tolerance
from tests.conftest import spec_for, vec_chapter_files, vec_pair_file

# --- 1. verification tolerance per dtype ---------------------------------------------------

# (rtol, atol) the harness promises per dtype (core.verify.DEFAULT_TOLERANCE, FP8_TOLERANCE)
CONTRACT = {
    torch.float64: (1e-7, 1e-9),
    torch.float32: (1e-4, 1e-5),
    torch.float16: (1e-2, 1e-3),
    torch.bfloat16: (1e-2, 1e-2),
}
FP8_CONTRACT = (1e-1, 1e-1)
OUTSIDE = (1.7, 2.4)  # |diff| / (atol + rtol·|expected|): must fail; a 3x looser limit passes it
INSIDE = (0.3, 0.65)  # must pass; a limit 2x tighter fails it


def _ratio(expected: torch.Tensor, actual: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    e, a = expected.double(), actual.double()
    return (a - e).abs() / (atol + rtol * e.abs())


def _pick(dtype: torch.dtype, rtol: float, atol: float, band: tuple[float, float],
          regime: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(expected, actual) in `dtype`, one element each, whose error after rounding to the
    dtype is `band` times the contract's allowance. regime "relative": |expected| so large
    that atol is < 1% of the allowance (pins rtol); "absolute": expected 0 (pins atol)."""
    steps = torch.linspace(band[0], band[1], 41, dtype=torch.float64)
    if regime == "absolute":
        expected = torch.zeros_like(steps)
        actual = steps * atol
    else:
        base = 100 * atol / rtol  # rtol·|e| ≥ 100·atol from here up
        grid = base * (1 + torch.linspace(0, 1, 97, dtype=torch.float64))
        expected = grid.repeat_interleave(len(steps))
        actual = expected * (1 + steps.repeat(len(grid)) * rtol)
    expected, actual = expected.to(dtype), actual.to(dtype)  # rounded as the dtype stores them
    ratio = _ratio(expected, actual, rtol, atol)
    ok = (ratio >= band[0]) & (ratio <= band[1])
    assert ok.any(), f"{dtype}: no {regime} value in {band} after rounding (test setup)"
    at = int(torch.nonzero(ok)[0])
    return expected[at:at + 1], actual[at:at + 1]


def _cases():
    for dtype, (rtol, atol) in CONTRACT.items():
        for regime in ("relative", "absolute"):
            yield pytest.param(dtype, rtol, atol, regime, id=f"{str(dtype)[6:]}-{regime}")


@pytest.mark.parametrize("dtype, rtol, atol, regime", list(_cases()))
def test_default_tolerance_boundary_per_dtype(dtype, rtol, atol, regime):
    """An output ~2x outside the dtype's default tolerance fails, one ~0.5x inside passes,
    for the relative part (large values) and the absolute part (values at zero) alike."""
    expected, actual = _pick(dtype, rtol, atol, OUTSIDE, regime)
    check = compare(expected, actual)
    assert not check.ok, (f"{dtype} {regime}: error of {float(_ratio(expected, actual, rtol, atol)):.2f}x "
                          f"the allowance (rtol={rtol:g}, atol={atol:g}) passed")
    assert "differ beyond" in check.message
    expected, actual = _pick(dtype, rtol, atol, INSIDE, regime)
    check = compare(expected, actual)
    assert check.ok, f"{dtype} {regime}: {check.message}"


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
@pytest.mark.parametrize("regime", ["relative", "absolute"])
def test_fp8_tolerance_boundary(dtype, regime):
    """fp8 outputs get rtol = atol = 0.1. compare() cannot check fp8 tensors on the CPU
    (torch has no isfinite for them there), so the tolerance default_tolerance() picks for
    fp8 is applied to float64 values at the boundary."""
    rtol, atol = FP8_CONTRACT
    tolerance = default_tolerance(dtype)
    expected, actual = _pick(torch.float64, rtol, atol, OUTSIDE, regime)
    assert not compare(expected, actual, tolerance).ok
    expected, actual = _pick(torch.float64, rtol, atol, INSIDE, regime)
    check = compare(expected, actual, tolerance)
    assert check.ok, check.message


def test_reference_comparison_uses_the_sides_dtype():
    """Against a float64 reference() answer (same_dtype=False) a float32 side gets the float32
    tolerance, not float64's (a float32 answer would never match to 1e-7)."""
    expected = torch.tensor([1000.0], dtype=torch.float64)
    inside = torch.tensor([1000.0 * (1 + 0.5e-4)], dtype=torch.float32)
    outside = torch.tensor([1000.0 * (1 + 2e-4)], dtype=torch.float32)
    assert compare(expected, inside, same_dtype=False).ok
    assert not compare(expected, outside, same_dtype=False).ok


def test_explicit_tolerance_is_used_as_rtol_and_atol():
    """A pair's own Tolerance(rtol, atol): each part bounds its own regime."""
    tolerance = Tolerance(rtol=1e-3, atol=1e-6)
    big = torch.tensor([1000.0], dtype=torch.float64)
    zero = torch.zeros(1, dtype=torch.float64)
    assert not compare(big, big * (1 + 2e-3), tolerance).ok
    assert compare(big, big * (1 + 0.5e-3), tolerance).ok
    assert not compare(zero, zero + 2e-6, tolerance).ok
    assert compare(zero, zero + 0.5e-6, tolerance).ok


def test_integers_must_match_exactly():
    expected = torch.arange(8)
    assert compare(expected, expected.clone()).ok
    assert not compare(expected, expected + torch.eye(8, dtype=torch.long)[3]).ok


# --- 2. escaped work: the fraction of wall time and the per-sample gap allowance -----------

def _batch(samples_ms: list[float], unaccounted_ms: float) -> Batch:
    return Batch(list(samples_ms), wall_ms=sum(samples_ms) + unaccounted_ms)


def test_escape_fraction_of_wall_time():
    """Long samples (gap allowance negligible): up to 2% of the wall time may be in no sample.
    3% unaccounted is flagged (an allowance of 3% or more lets it pass), 1% is not."""
    samples = [95.0] * 10
    assert escaped_work([_batch(samples, 0.03 / 0.97 * 950)], 0.0, "cuda")
    assert escaped_work([_batch(samples, 0.01 / 0.99 * 950)], 0.0, "cuda") is None
    # several batches: the fraction is of all their wall time together, not per batch
    assert escaped_work([_batch(samples, 0.03 / 0.97 * 950)] * 3, 0.0, "cuda")
    assert escaped_work([_batch(samples, 0.01 / 0.99 * 950)] * 3, 0.0, "cuda") is None


def test_escape_gap_allowance_per_sample():
    """Tiny samples (the fraction negligible): each step between samples may leave 3 launch
    gaps (+4 µs) unaccounted. 4 gaps per step are flagged (a factor of ~4 or more lets it
    pass), 2 are not."""
    gap = 0.1  # ms
    samples = [0.001] * 100
    steps = 101  # one per sample, plus one per batch
    assert escaped_work([_batch(samples, steps * 4 * gap)], gap, "cuda")
    assert escaped_work([_batch(samples, steps * 2 * gap)], gap, "cuda") is None
    # the harness's own steps between samples (a flush) are timed on the host: their host
    # time is allowed on top of the 101 steps' gaps, and nothing more
    flushed = Batch(list(samples), wall_ms=0.1 + 101 * 2 * gap + 100 * 2 * gap + 5.0, harness_ms=5.0,
                    harness_host_ms=100 * 2 * gap + 5.0)
    assert escaped_work([flushed], gap, "cuda") is None
    untimed = Batch(list(samples), wall_ms=flushed.wall_ms, harness_ms=5.0)
    assert escaped_work([untimed], gap, "cuda")


def test_one_stalled_batch_is_forgiven_a_second_flagged_batch_fails():
    """A host stall leaves one batch's GPU idle outside every sample; work on another stream
    leaves every batch short. The check after each batch fails a side at its second flagged
    batch, counted per side."""
    stalled = escaped_work([_batch([0.4] * 50, 35.0)], 0.01, "cuda")
    assert stalled  # one batch alone is flagged by escaped_work...
    strikes = EscapeStrikes()
    assert strikes.judge("graphs", stalled) is None  # ...and forgiven once
    assert strikes.judge("graphs", None) is None
    assert strikes.judge("other", stalled) is None  # another side's first strike is its own
    second = strikes.judge("graphs", stalled)
    assert second and second.startswith("work escaped") and "(in 2 batches)" in second


def test_escape_check_is_for_cuda_devices_only():
    escaped = _batch([0.001] * 10, 100.0)
    assert escaped_work([escaped], 0.0, "cuda:0")
    assert escaped_work([escaped], 0.0, "cpu") is None


# --- 3. NOISY: the side with fewer samples decides -------------------------------------------

TIGHT = (1.50, 1.51)  # a speedup interval narrow enough to store


@pytest.mark.parametrize("samples", [(5, 50), (50, 5), (9, 50), (50, 9)])
def test_too_few_samples_on_either_side_is_noisy(samples):
    reason = noisy_reason(samples, TIGHT, "converged")
    assert reason.startswith(f"only {min(samples)} samples"), reason


@pytest.mark.parametrize("samples", [(50, 50), (10, 10), (10, 2000)])
def test_enough_samples_on_both_sides_is_not_noisy(samples):
    assert noisy_reason(samples, TIGHT, "converged") == ""


def test_interval_width_limit_follows_the_tolerance():
    """The interval may span hi/lo ≤ max(1.10, 1 + tolerance)."""
    assert noisy_reason((50, 50), (1.0, 1.09), "converged", 0.10) == ""
    assert "wider than" in noisy_reason((50, 50), (1.0, 1.12), "converged", 0.10)
    assert noisy_reason((50, 50), (1.0, 1.20), "converged", 0.25) == ""
    assert "wider than" in noisy_reason((50, 50), (1.0, 1.30), "converged", 0.25)


# --- 4./5. rules checked during timing, on a fake pair run in this process ------------------

@pytest.fixture
def on_cpu(monkeypatch):
    """The pair runs on the CPU on any machine (no GPU timing noise, the same on every box)."""
    import core.child

    monkeypatch.setattr(core.child, "_device", lambda: "cpu")


def _run(root):
    (pair, examples), = select(["ch95"], root)
    result = run_pair(spec_for(pair, examples, iterations=4, warmup=1), random.Random(11))
    return result, {e.name: e for e in result.examples}


# A baseline that keeps its answer for the input tensor it last saw (by identity): right in
# verification (every seed brings new tensors), stale in timing (the harness refills the same
# tensors in place).
CACHING_BASELINE = vec_pair_file("""
    x, y = inputs
    if self.seen is not x:
        self.seen, self.out = x, x + y
    return self.out
""", setup="self.seen = None")


def test_baseline_caching_across_timed_calls_fails_the_pair(on_cpu, in_process_root, make_chapter):
    files = vec_chapter_files(default=vec_pair_file())
    files["baseline_vec.py"] = CACHING_BASELINE
    make_chapter("ch95", files)
    result, rows = _run(in_process_root)
    assert result.status == "failed"
    assert "ch95/baseline_vec.py" in rows["vec"].reason
    assert "differs from its own output on a fresh copy of the same inputs" in rows["vec"].reason


def test_honest_pair_passes_the_timed_checks(on_cpu, in_process_root, make_chapter):
    """The control: the same run with an honest baseline and variant passes."""
    make_chapter("ch95", vec_chapter_files(default=vec_pair_file()))
    result, rows = _run(in_process_root)
    assert result.status == "ok" and rows["vec"].status == "ok", rows["vec"].reason
    assert result.integrity.timed_output_checks >= 2


# Honest for the two verification calls, then halves y after computing each answer: only the
# timed calls (and the untimed ones around them) change the inputs. The answer it returns is
# right, so only the input check during timing can catch it.
def _mutating_during_timing(stateful: bool) -> str:
    return vec_pair_file("""
        x, y = inputs
        self.calls += 1
        out = x + y
        if self.calls > 2:
            y.mul_(0.5)
        return out
    """, setup="self.calls = 0", attrs="stateful = True" if stateful else "")


@pytest.mark.parametrize("stateful", [False, True], ids=["checked-side", "stateful-side"])
def test_modifying_inputs_only_during_timing_fails(on_cpu, in_process_root, make_chapter, stateful):
    """A side that leaves its inputs alone in verification but changes them in timed calls
    fails with the during-timing message (a stateful side's outputs are not compared in
    timing, so its inputs are checked against the round's first values)."""
    make_chapter("ch95", vec_chapter_files(default=_mutating_during_timing(stateful)))
    result, rows = _run(in_process_root)
    row = rows["vec"]
    assert row.status == "failed", "a side that modified its inputs during timing passed"
    assert "ch95/optimized_vec.py" in row.reason
    assert "modified its inputs (inputs[1])" in row.reason and "(during timing)" in row.reason
    assert row.verification is None or row.verification.ok  # verification itself passed


def test_baseline_modifying_inputs_during_timing_fails_the_pair(on_cpu, in_process_root, make_chapter):
    files = vec_chapter_files(default=vec_pair_file())
    files["baseline_vec.py"] = _mutating_during_timing(False)
    make_chapter("ch95", files)
    result, rows = _run(in_process_root)
    assert result.status == "failed"
    assert "ch95/baseline_vec.py" in rows["vec"].reason
    assert "modified its inputs" in rows["vec"].reason and "(during timing)" in rows["vec"].reason


def test_escape_problem_is_off_where_the_rank_runs_no_baseline_or_the_gpu_is_shared():
    from core.integrity import escape_problem
    from core.timing import Probe

    escaped = [_batch([0.001] * 10, 100.0)]
    assert escape_problem(escaped, 0.0, "cuda")
    assert escape_problem(escaped, 0.0, "cuda", checked=False) is None  # rank0_output's rank 1
    left = Probe(host_ms=0.1, gpu_ms=1.0, left_ms=5.0)  # most of the call ran after its end event
    assert "still busy" in escape_problem([_batch([1.0] * 10, 0.0)], 0.0, "cuda", left)
    assert escape_problem([_batch([1.0] * 10, 0.0)], 0.0, "cuda", left, checked=False) is None
