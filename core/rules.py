"""The pair owns the rules that judge it: what a variant may not bring of its own.

A pair is a question ("what is X worth on this workload?") and its variants are answers. The
question's terms are the baseline's (the stem's common class): the input builder, what one
call does (`workload()`), the trusted answer (`reference()`), and what a goal judges with (a
goodput pair's trace and SLO, a simulated pair's cost model: core.goals, `pair_owned`). A
variant that brings its own fails with a message naming its file. The one exception: a
variant that declares a narrower `precision` may count its own workload, bounded by the
baseline's (`workload_problem`).
"""
from __future__ import annotations

from core import goals
from core.benchmark import Benchmark, Workload, option

# What a variant inherits from the baseline and never brings of its own; workload() is the
# exception a declared `precision` allows, bounded by workload_problem().
PAIR_OWNED = ("make_inputs", "reference", "workload",
              *sorted({hook for goal in goals.GOALS.values() for hook in goal.pair_owned}))
# Matmul roofs from slowest to fastest: a variant may not count its FLOPs at a slower roof
# than the baseline's (that would raise its % of ceiling).
ROOF_ORDER = {"fp64": 0, "fp32": 1, "tf32": 2, "bf16": 3, "fp16": 3, "fp8": 4, "int8": 4,
              "fp4": 5, "nvfp4": 5}


def variant_problem(baseline: Benchmark, variant: Benchmark, origin: str) -> str | None:
    """Why `variant` (file `origin`) does not follow its pair's rules, or None: it defines
    its own input builder, reference, trace, cost model or (without a declared precision)
    workload, or its slo is not the baseline's."""
    for hook in PAIR_OWNED:
        theirs, ours = getattr(type(variant), hook, None), getattr(type(baseline), hook, None)
        if theirs is ours or (hook == "workload" and option(variant, "precision", "")):
            continue
        return (f"{origin}: defines its own {hook}{'()' if callable(theirs) else ''}; the sides "
                f"of a stem share the baseline's "
                f"(define it once in the stem's common class){_precision_hint(hook)}")
    if getattr(variant, "slo", None) != getattr(baseline, "slo", None):  # a goodput pair's SLO
        return (f"{origin}: declares its own slo ({getattr(variant, 'slo', None)}); the SLO is "
                f"the pair's (the baseline's: {getattr(baseline, 'slo', None)})")
    return None


def _precision_hint(hook: str) -> str:
    return ("; a variant that changes the precision declares precision = \"...\" and may then "
            "count its own narrower bytes and FLOPs" if hook == "workload" else "")


def workload_problem(baseline: Workload, variant: Workload, origin: str) -> str | None:
    """A variant's own workload (it declared a precision change) claims no more than the
    baseline's: no more bytes, FLOPs, bus or link bytes, the same units, and FLOPs at a roof
    no slower than the baseline's. Fewer bytes is the point of a narrower type."""
    too_many = [name for name in ("bytes", "flops", "bus_bytes", "link_bytes")
                if getattr(variant, name) > getattr(baseline, name) * (1 + 1e-9)]
    if too_many:
        return (f"{origin}: its workload() counts more {' and '.join(too_many)} than the "
                f"baseline's ({', '.join(f'{getattr(variant, n):.4g} > {getattr(baseline, n):.4g}' for n in too_many)}); "
                f"a variant does the pair's work, and a narrower precision moves fewer bytes")
    if variant.units != baseline.units or variant.unit_name != baseline.unit_name:
        return (f"{origin}: its workload() counts {variant.units:g} {variant.unit_name!r}, the "
                f"baseline's {baseline.units:g} {baseline.unit_name!r}; units are the pair's")
    if variant.flops and ROOF_ORDER.get(variant.flops_dtype, 0) < ROOF_ORDER.get(baseline.flops_dtype, 0):
        return (f"{origin}: its workload() counts FLOPs at {variant.flops_dtype}, a slower roof "
                f"than the baseline's {baseline.flops_dtype}")
    return None
