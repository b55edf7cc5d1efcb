"""Output verification: a pair whose outputs do not match has no speedup.

Checks, in order: same structure, shapes and dtypes; no NaN/Inf; allclose with the pair's
tolerance (default by dtype); and, for a declared tolerance, a scale-aware error: the relative
RMS error ‖actual − expected‖ / ‖expected‖ must stay within RMS_SHARE of the tolerance at the
output's own scale, max(rtol, atol / RMS(expected)). A declared tolerance is bounded first (`tolerance_problem`): an atol above MAX_ATOL_OF_RMS of the expected output's RMS, or an
rtol above MAX_RTOL, is refused with the numbers, so no declared tolerance can hide missing
work (half the rows left out give a relative RMS error of 0.71, above every limit). The runner also runs both sides on
a second seed and uses `outputs_equal` to catch outputs that do not depend on the inputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from core.benchmark import Tolerance

DEFAULT_TOLERANCE = {
    torch.float64: Tolerance(1e-7, 1e-9),
    torch.float32: Tolerance(1e-4, 1e-5),
    torch.float16: Tolerance(1e-2, 1e-3),
    torch.bfloat16: Tolerance(1e-2, 1e-2),
}
FP8_TOLERANCE = Tolerance(1e-1, 1e-1)
EXACT = Tolerance(0.0, 0.0)
# Bounds on a declared tolerance. The widest honest ones in the chapters: ch13 fp8 training
# (atol 1.0 output RMS, ~10 sigma of its per-element error; rtol 0.1), fp8 GEMMs (atol 0.3·√K
# against outputs of RMS ≈ √K). An atol is judged against the RMS of the whole expected output
# (a pair returning several tensors sets one tolerance for all of them).
MAX_ATOL_OF_RMS = 1.5
MAX_RTOL = 0.1
# The relative RMS error may reach this share of the tolerance at the output's scale: an
# elementwise bound set for the tails (several sigma of an honest error) leaves the RMS of
# honest errors well below half of it, while half the work left out gives 0.71.
RMS_SHARE = 0.5


@dataclass
class Check:
    ok: bool
    message: str
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    # the worst |diff| / (atol + rtol·|expected|): 1.0 is the tolerance's edge. Unlike
    # max_rel_err it stays meaningful where expected values are near zero (a relative error
    # of 1e+10 on an element of 1e-12 says nothing about the match)
    tolerance_used: float = 0.0
    rel_rms_err: float = 0.0  # the worst tensor's ‖actual − expected‖ / ‖expected‖
    rms_used: float = 0.0  # the worst rel_rms_err as a share of its limit (declared tolerances)

    def to_dict(self) -> dict:
        return {"ok": self.ok, "message": self.message, "max_abs_err": self.max_abs_err,
                "max_rel_err": self.max_rel_err, "tolerance_used": self.tolerance_used,
                "rel_rms_err": self.rel_rms_err, "rms_used": self.rms_used}


PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def plain_problem(output: Any, name: str = "output") -> str | None:
    """Why `output` is not plain, materialized data, or None.

    Plain: a torch.Tensor itself (or an nn.Parameter), strided and not on the meta device; a
    Python number; a tuple (torch.return_types too), list or dict of them. A tensor subclass or
    a lazy wrapper could compute its values only when the harness reads them, and the timed
    outputs it never reads would then cost nothing."""
    kind = type(output)
    if kind in PLAIN_TENSORS:
        if output.layout != torch.strided or output.is_meta:
            return (f"{name} is a {'meta' if output.is_meta else output.layout} tensor; return "
                    f"a dense tensor that holds its values")
        return None
    if kind in (int, float, bool):
        return None
    if kind in (tuple, list) or (isinstance(output, tuple) and kind.__module__ == "torch.return_types"):
        for i, value in enumerate(output):
            if problem := plain_problem(value, f"{name}[{i}]"):
                return problem
        return None
    if kind is dict:
        for key, value in output.items():
            if problem := plain_problem(value, f"{name}.{key}"):
                return problem
        return None
    what = "a torch.Tensor subclass" if isinstance(output, torch.Tensor) else "not a tensor"
    return (f"{name} is a {kind.__module__}.{kind.__qualname__} ({what}); return tensors "
            f"(plain torch.Tensor, or a tuple, list or dict of them) whose values exist when "
            f"run() returns")


def flatten(output: Any, name: str = "output") -> list[tuple[str, torch.Tensor]]:
    """Turn a tensor, number, or nested tuple/list/dict of them into named tensors."""
    if isinstance(output, torch.Tensor):
        return [(name, output)]
    if isinstance(output, (int, float, bool)):
        return [(name, torch.tensor(output))]
    if isinstance(output, dict):
        return [item for key in sorted(output) for item in flatten(output[key], f"{name}.{key}")]
    if isinstance(output, (list, tuple)):
        return [item for i, value in enumerate(output) for item in flatten(value, f"{name}[{i}]")]
    raise TypeError(f"run() returned {type(output).__name__}; return tensors (or a tuple/dict "
                    f"of tensors) so the harness can verify them")


def default_tolerance(dtype: torch.dtype) -> Tolerance:
    if dtype in DEFAULT_TOLERANCE:
        return DEFAULT_TOLERANCE[dtype]
    if dtype.is_floating_point:  # fp8 and other narrow floats
        return FP8_TOLERANCE
    return EXACT  # integers and bools must match exactly


def tolerance_problem(tolerance: Tolerance, rms: float) -> str | None:
    """Why a declared tolerance is too loose for an expected output of this RMS, or None."""
    if not all(math.isfinite(v) and v >= 0 for v in (tolerance.rtol, tolerance.atol)):
        # NaN compares False with everything, so it would pass every bound below and every
        # comparison after them; a negative one is no tolerance either
        return (f"the declared tolerance (rtol={tolerance.rtol!r}, atol={tolerance.atol!r}) is not "
                f"two finite, non-negative numbers")
    if tolerance.rtol > MAX_RTOL:
        return (f"the declared rtol={tolerance.rtol:g} is above {MAX_RTOL:g}; no precision "
                f"change in the book needs more, and more would hide missing work")
    if rms > 0 and tolerance.atol > MAX_ATOL_OF_RMS * rms:
        return (f"the declared atol={tolerance.atol:g} is {tolerance.atol / rms:.2g}x the RMS of "
                f"the expected output ({rms:.3g}); at most {MAX_ATOL_OF_RMS:g}x is allowed, or "
                f"it would hide missing work")
    return None


def _rms(tensors: Any) -> float:
    """The RMS over every element of `tensors` (float64, chunked)."""
    total, count = 0.0, 0
    for t in tensors:
        flat = t.detach().reshape(-1)
        for start in range(0, flat.numel(), COMPARE_CHUNK):
            part = flat[start:start + COMPARE_CHUNK].double()
            total += float((part * part).sum())
        count += flat.numel()
    return math.sqrt(total / count) if count else 0.0


def compare(expected: Any, actual: Any, tolerance: Tolerance | None = None,
            same_dtype: bool = True, bounded: bool = False) -> Check:
    """Compare the baseline's output (`expected`) with a variant's (`actual`).

    `same_dtype=False` for a reference() answer, which may be float64 where the side is not;
    the tolerance then defaults by the side's (`actual`'s) dtype. `bounded`: `tolerance` was
    declared by the side being judged, and is checked against the output's scale first."""
    exp, act = flatten(expected), flatten(actual)
    if len(exp) != len(act):
        return Check(False, f"baseline returned {len(exp)} tensors, optimized {len(act)}")
    if bounded and tolerance is not None:
        problem = tolerance_problem(tolerance, _rms(e for _, e in exp))
        if problem:
            return Check(False, problem)
    worst_abs = worst_rel = worst_used = worst_rms = rms_used = 0.0
    for (name, e), (_, a) in zip(exp, act):
        if e.shape != a.shape:
            return Check(False, f"{name}: shape {tuple(a.shape)} != baseline {tuple(e.shape)}")
        if same_dtype and e.dtype != a.dtype:
            return Check(False, f"{name}: dtype {a.dtype} != baseline {e.dtype}")
        e_flat, a_flat = _flat_on(_compare_device(e), e), _flat_on(_compare_device(e), a)
        if e_flat.dtype == a_flat.dtype and torch.equal(e_flat, a_flat):  # NaN is never equal
            problem = _non_finite(name, [("optimized", a_flat)])
            if problem:  # an Inf on both sides
                return Check(False, problem)
            continue  # bit-identical: every error is 0
        tol = tolerance or default_tolerance(e.dtype if same_dtype else a.dtype)
        max_abs = max_rel = used = 0.0
        bad_count, worst_excess, worst_at = 0, -math.inf, 0
        diff_sq = exp_sq = 0.0
        for start in range(0, e_flat.numel(), COMPARE_CHUNK):
            e64 = e_flat[start:start + COMPARE_CHUNK].detach().double()
            a64 = a_flat[start:start + COMPARE_CHUNK].detach().double()
            diff = torch.sub(a64, e64).abs_()
            del a64
            e_abs = e64.abs()
            diff_sq += float(torch.dot(diff, diff))  # a NaN or Inf anywhere makes these non-finite
            exp_sq += float(torch.dot(e64, e64))
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float((diff / e_abs.clamp_min(1e-12)).max()))
            allowed = tol.atol + tol.rtol * e_abs
            # an exact tolerance (allowed 0) is used only where diff > 0: failed below
            used = max(used, float((diff / allowed).max() if tol.atol > 0 else
                                   torch.where(allowed > 0, diff / allowed.clamp_min(1e-300),
                                               torch.zeros_like(diff)).max()))
            bad = int(torch.count_nonzero(diff > allowed))
            if bad:
                bad_count += bad
                excess = diff - tol.rtol * e_abs
                at = int(torch.argmax(excess))
                if float(excess[at]) > worst_excess:
                    worst_excess, worst_at = float(excess[at]), start + at
        if not math.isfinite(diff_sq + exp_sq + max_abs):
            problem = _non_finite(name, [("optimized", a_flat), ("baseline", e_flat)])
            if problem:
                return Check(False, problem)
        worst_abs, worst_rel = max(worst_abs, max_abs), max(worst_rel, max_rel)
        worst_used = max(worst_used, used)
        rms = math.sqrt(exp_sq / max(1, e.numel()))
        rel_rms = math.sqrt(diff_sq / exp_sq) if exp_sq > 0 else (0.0 if diff_sq == 0 else math.inf)
        worst_rms = max(worst_rms, rel_rms)
        if bad_count:
            return Check(False, f"{name}: {bad_count} of {e.numel()} elements differ beyond "
                                f"rtol={tol.rtol:g} atol={tol.atol:g}; worst at "
                                f"{_unravel(worst_at, tuple(e.shape))}: baseline "
                                f"{float(e_flat[worst_at].double()):.6g}, optimized "
                                f"{float(a_flat[worst_at].double()):.6g}",
                         max_abs, max_rel, worst_used, worst_rms)
        if not (bounded and tolerance is not None and e.is_floating_point() and rms > 0):
            continue  # the scale-aware error judges declared tolerances (the defaults are ours)
        allowed_rms = RMS_SHARE * max(tol.rtol, tol.atol / rms)
        if allowed_rms == 0:
            continue  # an exact tolerance: every element matched already
        rms_used = max(rms_used, rel_rms / allowed_rms)
        if rel_rms > allowed_rms:
            return Check(False, f"{name}: relative RMS error {rel_rms:.3g} is above "
                                f"{allowed_rms:.3g}, half the tolerance at this output's scale "
                                f"(rtol={tol.rtol:g}, atol={tol.atol:g}, RMS {rms:.3g}): the "
                                f"answer is off everywhere, not in a few elements",
                         max_abs, max_rel, worst_used, worst_rms, rms_used)
    return Check(True, "match", worst_abs, worst_rel, worst_used, worst_rms, rms_used)


def _non_finite(name: str, sides: list[tuple[str, torch.Tensor]]) -> str | None:
    """Why an output with NaN or Inf values fails, naming the first side that has them."""
    for side, t in sides:
        if t.is_floating_point():
            bad = sum(int((~torch.isfinite(part)).sum()) for part in t.split(COMPARE_CHUNK))
            if bad:
                return f"{name}: {side} output has {bad} NaN/Inf values"
    return None


# Elements compared at a time: float64 temporaries of 128 MiB each, whatever the output's size.
COMPARE_CHUNK = 1 << 24


def _compare_device(t: torch.Tensor) -> torch.device:
    """Where to compare: an output on the host (a pipeline's copies back, ~60 M values in ch11)
    is compared on the GPU when this process already uses one; in float64 on the host it cost
    ~0.5 s per check on an H100 host, several times per timing round. CUDA is never started
    here for it."""
    if t.device.type == "cpu" and t.numel() >= COMPARE_CHUNK // 16 and torch.cuda.is_initialized():
        return torch.device("cuda")
    return t.device


def _flat_on(device: torch.device, t: torch.Tensor) -> torch.Tensor:
    return t.detach().reshape(-1).to(device)


def outputs_equal(first: Any, second: Any) -> bool:
    """True if two runs gave bit-identical outputs (used across seeds: they must not)."""
    a, b = flatten(first), flatten(second)
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y.to(x.device))
        for (_, x), (_, y) in zip(a, b))


def snapshot(output: Any) -> Any:
    """A private copy of an output (same structure), so later runs cannot change it."""
    if isinstance(output, torch.Tensor):
        return output.detach().clone()
    if isinstance(output, dict):
        return {key: snapshot(value) for key, value in output.items()}
    if isinstance(output, (list, tuple)):
        return type(output)(snapshot(value) for value in output)
    return output


def snapshot_into(buffer: Any, output: Any) -> Any:
    """Copy `output` into `buffer` (an earlier snapshot of the same structure) without
    allocating, and return it; a fresh snapshot when the structure differs.

    The timed-output check captures one sample's output inside a timed batch: a new
    allocation there can reach cudaMalloc/cudaFree, which stall the host while the GPU idles,
    and the escape check would count that idle time against the pair."""
    try:
        pairs = list(zip(flatten(buffer), flatten(output), strict=True))
    except (TypeError, ValueError):
        return snapshot(output)
    if not pairs or any(b.shape != o.shape or b.dtype != o.dtype or b.device != o.device
                        for (_, b), (_, o) in pairs):
        return snapshot(output)
    if isinstance(output, (int, float, bool)) or not isinstance(buffer, type(output)):
        return snapshot(output)
    with torch.no_grad():
        for (_, b), (_, o) in pairs:
            b.copy_(o)
    return buffer


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for dim in reversed(shape):
        index.append(flat % dim)
        flat //= dim
    return tuple(reversed(index))
