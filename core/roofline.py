"""`tools roofline RUN_DIR`: where each measured pair of a finished run sits under the roofs
that run measured.

For every verified example with a declared workload, each side is placed on the roofline of
the run's own ceilings (core.hardware: the copy bandwidth and the matmul TFLOP/s of the
workload's precision):

    intensity  = FLOPs / bytes                     (FLOP per byte moved to and from HBM)
    attainable = min(matmul roof, intensity × copy bandwidth)
    achieved   = FLOPs / median time               (TFLOP/s), or bytes / time (GB/s) for a
                                                   pair that declares no FLOPs
    % of roof  = achieved / attainable

A side at 90% of its roof has little left to win with the technique's kind of change; a side
at 20% of a memory roof moves more bytes than it declares or waits on something else
(launches, the host, synchronisation). Pairs whose workload counts only units (tokens,
requests) or a link/collective have no roofline point and are listed apart.

Nothing is re-measured: this reads results.json (core.compare.load_run).
"""
from __future__ import annotations

from dataclasses import dataclass

from core.metrics import compute_ceiling
from core.record import ExampleResult, RunRecord, SideResult


@dataclass(frozen=True)
class RooflinePoint:
    """One side of one example under the run's roofs."""

    example: str  # chNN:name
    side: str  # baseline | optimized
    intensity: float | None  # FLOP/byte; None for a bytes-only workload
    achieved: float  # TFLOP/s with FLOPs, else GB/s
    unit: str  # "TFLOP/s" | "GB/s"
    attainable: float  # the roof at this intensity, in `unit`
    roof: str  # which roof bounds it: "copy_gbps" or a matmul ceiling's key
    bound: str  # memory | compute

    @property
    def pct_of_roof(self) -> float:
        return 100 * self.achieved / self.attainable


@dataclass(frozen=True)
class Roofline:
    points: list[RooflinePoint]
    unplaced: list[tuple[str, str]]  # (example, why it has no point)
    copy_gbps: float | None


def place(side: SideResult, example: str, name: str, ceilings: dict[str, float]
          ) -> RooflinePoint | str:
    """The side's point, or why it has none."""
    w, copy = side.workload, ceilings.get("copy_gbps")
    if side.median_ms is None or side.median_ms <= 0:
        return "not timed"
    if not w.bytes:
        return ("its workload declares FLOPs but no bytes: no intensity to place it at" if w.flops
                else "its workload counts no FLOPs or bytes (units, a link or a collective)")
    if not copy:
        return "this run measured no copy ceiling"
    seconds = side.median_ms / 1e3
    if not w.flops:
        return RooflinePoint(example, name, None, w.bytes / seconds / 1e9, "GB/s", copy,
                             "copy_gbps", "memory")
    matmul_key = compute_ceiling(w.flops_dtype, ceilings)
    peak = ceilings.get(matmul_key) if matmul_key else None
    if not peak:
        return f"this run measured no matmul ceiling for {w.flops_dtype or 'its precision'}"
    intensity = w.flops / w.bytes
    memory_roof = intensity * copy / 1e3  # GB/s × FLOP/byte = GFLOP/s → TFLOP/s
    bound = "memory" if memory_roof < peak else "compute"
    return RooflinePoint(example, name, intensity, w.flops / seconds / 1e12, "TFLOP/s",
                         min(memory_roof, peak), "copy_gbps" if bound == "memory" else matmul_key,
                         bound)


def roofline(record: RunRecord) -> Roofline:
    """Both sides of every measured example of the run, in the run's order."""
    points: list[RooflinePoint] = []
    unplaced: list[tuple[str, str]] = []
    for ex in record.rows:
        if not _measured(ex):
            continue
        found = [place(side, ex.id, name, record.ceilings)
                 for name, side in (("baseline", ex.baseline), ("optimized", ex.timing))]
        if all(isinstance(p, RooflinePoint) for p in found):
            points.extend(found)  # type: ignore[arg-type]
        else:
            unplaced.append((ex.id, next(p for p in found if isinstance(p, str))))
    return Roofline(points, unplaced, record.ceilings.get("copy_gbps"))


def _measured(ex: ExampleResult) -> bool:
    return ex.measured and ex.baseline is not None and ex.timing is not None


def table_rows(result: Roofline) -> list[list[str]]:
    """One row per side: example, side, FLOP/byte, achieved, roof, % of roof, bound."""
    rows = []
    for p in result.points:
        intensity = f"{p.intensity:.3g}" if p.intensity is not None else "-"
        rows.append([p.example, p.side, intensity, f"{p.achieved:.4g} {p.unit}",
                     f"{p.attainable:.4g} {p.unit} ({p.roof})", f"{p.pct_of_roof:.0f}%", p.bound])
    return rows
