"""Output verification (core.verify)."""
from __future__ import annotations

import pytest
import torch

from core.benchmark import Tolerance
from core.verify import compare, default_tolerance, flatten, outputs_equal, snapshot


def _rand(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def test_match_within_default_tolerance():
    expected = _rand(4, 5)
    check = compare(expected, expected * (1 + 1e-6))
    assert check.ok and check.message == "match"
    assert 0 < check.max_rel_err < 1e-5
    assert check.to_dict()["ok"] is True


def test_wrong_value_reports_worst_index_and_values():
    expected = _rand(4, 5)
    actual = expected.clone()
    actual[2, 3] += 5.0
    actual[0, 1] += 0.5
    check = compare(expected, actual)
    assert not check.ok
    assert "2 of 20 elements" in check.message
    assert "worst at (2, 3)" in check.message
    assert f"{float(expected[2, 3]):.6g}" in check.message
    assert check.max_abs_err == pytest.approx(5.0, rel=1e-6)


def test_nan_and_inf_are_failures_on_either_side():
    expected = _rand(8)
    bad = expected.clone()
    bad[3] = float("nan")
    bad[5] = float("inf")
    check = compare(expected, bad)
    assert not check.ok and "optimized output has 2 NaN/Inf" in check.message
    check = compare(bad, expected)
    assert not check.ok and "baseline output has 2 NaN/Inf" in check.message
    # NaN in both at the same place is still a failure, not a match
    assert not compare(bad, bad.clone()).ok


def test_shape_and_dtype_mismatch():
    expected = _rand(4, 5)
    check = compare(expected, expected.reshape(5, 4))
    assert not check.ok and "shape (5, 4) != baseline (4, 5)" in check.message
    check = compare(expected, expected.double())
    assert not check.ok and "dtype torch.float64" in check.message and "torch.float32" in check.message


def test_integers_must_match_exactly():
    expected = torch.arange(10, dtype=torch.int64) * 1_000_000
    assert compare(expected, expected.clone()).ok
    off_by_one = expected.clone()
    off_by_one[9] += 1  # relative error 1e-7: would pass any float tolerance
    check = compare(expected, off_by_one)
    assert not check.ok and "worst at (9,)" in check.message
    assert default_tolerance(torch.int32) == Tolerance(0.0, 0.0)
    assert default_tolerance(torch.bool) == Tolerance(0.0, 0.0)


def test_default_tolerance_by_dtype_and_custom_tolerance():
    expected = _rand(64, dtype=torch.bfloat16)
    close = (expected.float() * 1.004).to(torch.bfloat16)
    assert compare(expected, close).ok  # bf16 default rtol 1e-2
    e32 = _rand(64)
    assert not compare(e32, e32 * 1.004).ok  # fp32 default rtol 1e-4
    assert compare(e32, e32 * 1.004, Tolerance(rtol=1e-2, atol=0.0)).ok
    assert default_tolerance(torch.float8_e4m3fn).rtol >= 0.05


def test_tuple_and_dict_outputs():
    a, b = _rand(3), _rand(2, 2, seed=1)
    assert compare((a, b), (a.clone(), b.clone())).ok
    wrong_b = b.clone()
    wrong_b[1, 0] += 1.0
    check = compare((a, b), (a, wrong_b))
    assert not check.ok and check.message.startswith("output[1]:") and "(1, 0)" in check.message
    check = compare({"logits": a, "state": b}, {"state": wrong_b, "logits": a})
    assert not check.ok and check.message.startswith("output.state:")
    check = compare((a, b), (a,))
    assert not check.ok and "baseline returned 2 tensors, optimized 1" in check.message
    assert compare({"n": 3, "x": [a, b]}, {"n": 3, "x": [a, b]}).ok


def test_flatten_names_and_rejects_non_tensors():
    names = [name for name, _ in flatten({"b": (1, torch.ones(2)), "a": 2.0})]
    assert names == ["output.a", "output.b[0]", "output.b[1]"]
    with pytest.raises(TypeError, match="return tensors"):
        flatten("a string")


def test_outputs_equal():
    a = _rand(5)
    assert outputs_equal(a, a.clone())
    assert outputs_equal((a, {"k": a}), (a.clone(), {"k": a.clone()}))
    b = a.clone()
    b[0] = b[0] + 1e-6
    assert not outputs_equal(a, b)
    assert not outputs_equal(a, a.double())
    assert not outputs_equal(a, a.reshape(5, 1))
    assert not outputs_equal((a, a), (a,))


def test_snapshot_is_a_private_copy():
    a = torch.zeros(3)
    snap = snapshot({"x": (a, [a])})
    a.fill_(7.0)
    assert float(snap["x"][0].sum()) == 0.0 and float(snap["x"][1][0].sum()) == 0.0
    assert isinstance(snap["x"], tuple) and isinstance(snap["x"][1], list)


def test_reference_comparison_across_dtypes():
    # reference() may answer in float64 where the side computes in bf16: with same_dtype=False
    # the dtypes may differ and the tolerance defaults by the side's (actual's) dtype
    reference = _rand(64, dtype=torch.float64)
    side = reference.to(torch.bfloat16)
    assert not compare(reference, side).ok  # a variant may not change the baseline's dtype
    assert compare(reference, side, same_dtype=False).ok  # bf16 rounding, bf16 tolerance
    off = side.clone()
    off[5] = off[5] * 1.5 + 1.0
    check = compare(reference, off, same_dtype=False)
    assert not check.ok and "worst at (5,)" in check.message
    # a float64 reference does not loosen an fp32 side's tolerance
    assert not compare(reference, (reference * 1.004).float(), same_dtype=False).ok


def test_tolerance_used_is_the_worst_error_as_a_share_of_the_tolerance():
    """The table shows how much of the tolerance a match used; near-zero expected values make
    max_rel_err enormous without saying anything about the match, tolerance_used stays sane."""
    from core.benchmark import Tolerance
    from core.report import verify_cell
    from core.record import Verification

    expected = torch.tensor([1.0, 1e-12, 2.0])
    actual = torch.tensor([1.0 + 5e-3, 1e-12 + 5e-5, 2.0])
    check = compare(expected, actual, Tolerance(rtol=1e-2, atol=1e-4))
    assert check.ok and check.max_rel_err > 1e6                     # misleading on its own
    assert check.tolerance_used == pytest.approx(0.5, rel=1e-6)     # element 1: 5e-5 of atol 1e-4
    assert verify_cell(Verification(max_abs_err=5e-3, tolerance_used=check.tolerance_used)) == "ok (50% of tol)"
    assert verify_cell(Verification(max_abs_err=0.0)) == "ok (exact)"
    over = compare(expected, expected + 1.0, Tolerance(rtol=1e-2, atol=1e-4))
    assert not over.ok and over.tolerance_used > 1


def test_a_result_without_tolerance_used_does_not_claim_a_share():
    """Results written before tolerance_used existed must not read as '<1% of tol'."""
    from core.record import Verification
    from core.report import verify_cell

    old = Verification.from_dict({"ok": True, "message": "match", "max_abs_err": 4.9e-4,
                                  "max_rel_err": 1624.3, "checks": 12})
    assert old.tolerance_used is None and verify_cell(old) == "ok"


def test_comparing_in_chunks_finds_the_same_worst_element_and_counts(monkeypatch):
    # outputs larger than one chunk are compared a chunk at a time (bounded float64
    # temporaries); the verdict, the count and the worst element must not depend on it
    import core.verify as verify

    gen = torch.Generator().manual_seed(3)
    expected = torch.randn(7, 50, generator=gen)
    actual = expected.clone()
    actual[1, 3] += 0.5  # in the first chunks
    actual[6, 41] += 2.0  # the worst, in the last chunk
    actual[4, 0] = actual[4, 0] + 1e-7  # within tolerance
    whole = compare(expected, actual)
    monkeypatch.setattr(verify, "COMPARE_CHUNK", 16)
    chunked = compare(expected, actual)
    assert not whole.ok and not chunked.ok
    assert chunked.message == whole.message
    assert "2 of 350 elements" in chunked.message and "(6, 41)" in chunked.message
    assert chunked.max_abs_err == whole.max_abs_err
    assert chunked.tolerance_used == pytest.approx(whole.tolerance_used)
    actual[2, 2] = float("nan")
    assert "1 NaN/Inf" in compare(expected, actual).message
