"""results.csv: one row per example of a run, beside results.json, for spreadsheets and scripts.

The row is the table a user reads, in plain cells: numbers unformatted (empty where there
is none), the reason a row failed or was skipped, the gate's verdict and the tags that
explain a number. results.json stays the whole record (raw samples, fingerprint, integrity);
the CSV is written from the same typed record (core.record) whenever the runner writes
results.json, and after each pair, so an interrupted run leaves the pairs it finished.

Columns (COLUMNS, in this order):
    pair, example, variant, file      chNN:stem, chNN:name (a --targets name), name, file
    status, reason                    ok | failed | skipped, and why it is not ok
    goal                              speed | memory | compile_time | goodput
    baseline_ms, optimized_ms         medians
    speedup, speedup_low, speedup_high   baseline / optimized, with its interval
    noisy                             why the result is too noisy to store ("" when it is not)
    goal_ratio                        memory, cold-start or goodput ratio for those goals
    rate, rate_unit, pct_of_ceiling, ceiling   the optimized side's headline rate
    verification, max_abs_err, max_rel_err,    how the outputs compared (tolerance_used: the
    tolerance_used                             worst error as a share of the tolerance; ≤ 1 passes)
    expectation, expectation_message, stored_speedup   the gate's verdict
    teaching, negative_result, cpu_bound, host_bound, tags
"""
from __future__ import annotations

import csv
import io
from dataclasses import astuple, dataclass, fields
from pathlib import Path

from core import atomic, goals
from core.record import ExampleResult, PairResult, Rates, RunRecord


@dataclass(frozen=True)
class CsvRow:
    pair: str
    example: str
    variant: str
    file: str
    status: str
    reason: str
    goal: str
    baseline_ms: float | None
    optimized_ms: float | None
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    noisy: str
    goal_ratio: float | None
    rate: float | None
    rate_unit: str
    pct_of_ceiling: float | None
    ceiling: str
    verification: str
    max_abs_err: float | None
    max_rel_err: float | None
    tolerance_used: float | None
    expectation: str
    expectation_message: str
    stored_speedup: float | None
    teaching: bool
    negative_result: str
    cpu_bound: str
    host_bound: str  # the sides whose samples measure the host: "baseline;optimized"
    tags: str  # short labels, ";"-separated: teaching, negative, cpu_bound, host_bound, noisy, graph

    @classmethod
    def of(cls, pair: PairResult, ex: ExampleResult) -> CsvRow:
        rates = ex.timing.rates if ex.timing is not None else None
        rate, unit = headline_rate(rates)
        low, high = ex.speedup_ci or (None, None)
        check, gate = ex.verification, ex.expectation
        return cls(
            pair=pair.pair, example=ex.id, variant=ex.name, file=ex.file, status=ex.status,
            reason=ex.reason, goal=ex.goal, baseline_ms=ex.baseline_ms,
            optimized_ms=ex.optimized_ms, speedup=ex.speedup, speedup_low=low, speedup_high=high,
            noisy=ex.noisy, goal_ratio=goal_ratio(ex), rate=rate, rate_unit=unit,
            pct_of_ceiling=rates.pct_of_ceiling if rates else None,
            ceiling=(rates.ceiling or "") if rates else "",
            verification=check.message if check is not None else "",
            max_abs_err=check.max_abs_err if check is not None else None,
            max_rel_err=check.max_rel_err if check is not None else None,
            tolerance_used=check.tolerance_used if check is not None else None,
            expectation=gate.status if gate is not None else "",
            expectation_message=gate.message if gate is not None else "",
            stored_speedup=gate.stored_speedup if gate is not None else None,
            teaching=ex.teaching or pair.teaching, negative_result=ex.negative_result,
            cpu_bound=ex.cpu_bound, host_bound=";".join(ex.host_bound), tags=";".join(tags(pair, ex)))

    def cells(self) -> list[str]:
        return [_cell(value) for value in astuple(self)]


COLUMNS = [f.name for f in fields(CsvRow)]


def goal_ratio(ex: ExampleResult) -> float | None:
    """The quantity a goal other than speed is judged on (None for speed)."""
    goal = goals.GOALS.get(ex.goal)
    return None if goal is None or goal.gates_time else goal.ratio(ex)


def headline_rate(rates: Rates | None) -> tuple[float | None, str]:
    """The rate the table shows (core.metrics.headline), as a number and its unit."""
    if rates is None:
        return None, ""
    if rates.bound == "network" and rates.bus_gbps is not None:
        return rates.bus_gbps, "GB/s bus"
    if rates.bound == "link" and rates.link_gbps is not None:
        return rates.link_gbps, f"GB/s {rates.link}"
    if rates.bound == "memory" and rates.gbps is not None:
        return rates.gbps, "GB/s"
    if rates.bound == "compute" and rates.tflops is not None:
        return rates.tflops, "TFLOP/s"
    if rates.units_per_s is not None:
        return rates.units_per_s, f"{rates.unit_name}/s"
    return None, ""


def tags(pair: PairResult, ex: ExampleResult) -> list[str]:
    found = [("teaching", ex.teaching or pair.teaching), ("negative", ex.negative_result),
             ("cpu_bound", ex.cpu_bound), ("host_bound", ex.host_bound), ("noisy", ex.noisy),
             ("graph", ex.timing is not None and ex.timing.graph_calls),
             ("simulated", ex.simulated)]
    return [name for name, present in found if present]


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # full precision; inf and nan as Python writes them
    return str(value)


def rows(record: RunRecord) -> list[CsvRow]:
    return [CsvRow.of(pair, ex) for pair in record.pairs for ex in pair.examples]


def render(record: RunRecord) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(row.cells() for row in rows(record))
    return buffer.getvalue()


def write(record: RunRecord, path: str | Path) -> Path:
    """Write results.csv atomically (readers see the previous version or this one)."""
    atomic.write_text(path, render(record))
    return Path(path)
