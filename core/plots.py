"""Charts of a run: speedups with their intervals, and each pair against the ceilings."""
from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import NamedTuple

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")  # files only; no display needed (CI, GPU servers)
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from core import goals  # noqa: E402
from core.metrics import rates as side_rates  # noqa: E402
from core.record import ExampleResult, Rates, SideResult  # noqa: E402

_CEILING_LABELS = {"matmul_fp32_tflops": "fp32", "fma_fp32_tflops": "fp32 FMA", "matmul_tf32_tflops": "tf32",
                   "matmul_bf16_tflops": "bf16", "matmul_fp16_tflops": "fp16",
                   "matmul_fp8_tflops": "fp8"}


def _measured(rows: list[ExampleResult]) -> list[ExampleResult]:
    return [r for r in rows if r.measured]


def _ci(r: ExampleResult) -> tuple[float, float]:
    return r.speedup_ci or (r.speedup, r.speedup)


def _rates(side: SideResult | None, ceilings: dict[str, float]) -> Rates | None:
    """The side's rates as the runner stored them (computed here when it did not)."""
    if side is None:
        return None
    return side.rates or side_rates(side.workload, side.median_ms, ceilings)


class Bar(NamedTuple):
    """A row's bar: its value and interval, the words after its name, and whether the value
    is the ratio its goal gates (so the stored value's tick belongs beside it)."""
    value: float
    low: float
    high: float
    words: str
    gated: bool


def _bar(r: ExampleResult) -> Bar:
    """The ratio a row's goal gates: a pair about memory, goodput or a cold start is judged on
    that, not on its time (ch13:fsdp's 2.73x less memory drawn as its 0.95x time read as a
    slowdown). Where this run did not measure it (a CPU run), or it has no length (goodput
    over a baseline that met no SLO), the bar is the time, and says so."""
    goal = goals.GOALS.get(r.goal, goals.GOALS[goals.DEFAULT])
    time_bar = lambda words: Bar(r.speedup, *_ci(r), words, goal.gates_time)
    if goal.gates_time:
        return time_bar("")
    ratio = goal.ratio(r)
    if ratio == float("inf"):
        return time_bar(f" (time; the baseline's {goal.name} was 0)")
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return time_bar(f" (time; {goal.name} not measured)")
    return Bar(ratio, ratio, ratio, f" ({goal.gain})", True)


def _kind(r: ExampleResult) -> str:
    """How a bar is drawn: the verdict a reader must not misread (a declared negative result
    is not a failure, a teaching example is not a result)."""
    if r.teaching:
        return "teaching"
    if r.negative_result:
        return "negative"
    if r.expectation is not None and r.expectation.status == "regression":
        return "regression"
    bar = _bar(r)
    if bar.low < 1 < bar.high:
        return "even"  # neither faster nor slower, as far as its samples can tell
    return "faster" if bar.value >= 1 else "slower"


_KINDS = {"faster": ("tab:green", "faster"), "even": ("lightgrey", "interval spans 1x"),
          "slower": ("tab:orange", "slower, undeclared"),
          "regression": ("tab:red", "regression (gate)"),
          "negative": ("tab:blue", "declared negative result"), "teaching": ("tab:gray", "teaching")}


def _speedup_ticks(limit: float) -> list[float]:
    """The labelled ticks of the axis [1/limit, limit]: 1x and powers of ten (every second
    or third one past three decades each side), with 2x and 5x steps while it spans less
    than two decades each side: few enough that no two labels touch (an 8900x teaching bar
    gave 25 ticks, `0.0001x0.0002x...`)."""
    top = int(math.log10(limit))  # whole decades each side of 1x
    step = max(1, math.ceil(top / 3))
    ticks = [10.0 ** k for k in range(-top, top + 1) if k % step == 0]
    if top <= 1:
        ticks += [m * p for m in (2, 5) for p in (0.01, 0.1, 1, 10)]
    return sorted(t for t in ticks if 1 / limit <= t <= limit)


def speedups(rows: list[ExampleResult], path: Path, context: str = "") -> Path | None:
    """Horizontal bars of each example's speedup with its 95% interval, on a log scale centred
    on 1x (bars grow from 1x, right when faster, left when slower); a pair gated on another
    goal shows that goal's ratio, named beside it (`_bar`). `context`: the device, the
    commit and the run's mode, for the title."""
    rows = _measured(rows)
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: _bar(r).value)
    shown = [_bar(r) for r in rows]
    labels = [r.id + bar.words + (" (noisy)" if r.noisy else "") for r, bar in zip(rows, shown)]
    values = [bar.value for bar in shown]
    lo = [bar.value - bar.low for bar in shown]
    hi = [bar.high - bar.value for bar in shown]
    kinds = [_kind(r) for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.3 * len(rows) + 2.0))
    bars = ax.barh(labels, [v - 1.0 for v in values], left=1.0, xerr=[lo, hi], capsize=3,
                   color=[_KINDS[k][0] for k in kinds],
                   hatch=["//" if r.noisy else None for r in rows])
    ax.bar_label(bars, labels=[f"{v:.2f}x" for v in values], padding=8, fontsize=7)
    ax.tick_params(axis="y", labelsize=7 if len(rows) > 40 else 9)
    ax.margins(y=0.5 / max(len(rows), 1))
    for y, (r, bar) in enumerate(zip(rows, shown)):
        stored = r.expectation.stored_speedup if r.expectation is not None else None  # the gated ratio
        if stored and bar.gated:
            ax.plot([stored, stored], [y - 0.4, y + 0.4], color="black", linewidth=1.5)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    low = min([1.0, *(c - e for c, e in zip(values, lo))])
    high = max([1.0, *(c + e for c, e in zip(values, hi))])
    # symmetric about 1x, and wide enough that the value labels past the farthest interval
    # (about half an inch) stay inside the axes, however many decades it spans
    limit = 10 ** (math.log10(max(high, 1 / low)) / 0.7 + 0.15)
    ax.set_xlim(1 / limit, limit)
    ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(_speedup_ticks(limit)))
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_xlabel("speedup (baseline median / optimized median), or the goal named beside the pair; "
                  "log scale;\nblack tick: stored expectation; hatched: too few samples (noisy)")
    ax.set_title("Speedup per pair (95% interval)" + (f"\n{context}" if context else ""), fontsize=10,
                 pad=20)  # above the legend
    used = [k for k in _KINDS if k in kinds]
    ax.legend(handles=[Patch(color=_KINDS[k][0], label=_KINDS[k][1]) for k in used],
              fontsize=7, ncol=len(used), frameon=False, loc="lower left", bbox_to_anchor=(0.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def roofline(rows: list[ExampleResult], ceilings: dict[str, float], path: Path,
             context: str = "") -> Path | None:
    """Left: pairs with FLOPs on a roofline (arithmetic intensity vs TFLOP/s) under the
    measured copy-bandwidth slope and matmul roofs. Right: pairs that only move bytes, as
    GB/s against the copy ceiling. Baseline = open circle, optimized = filled, joined.
    Baseline rates come from ex.baseline.rates, optimized from ex.timing.rates."""
    rows = [r for r in _measured(rows) if r.baseline is not None]
    bandwidth = ceilings.get("copy_gbps")
    if not rows or not bandwidth:
        return None
    # (example, its optimized workload, baseline rates, optimized rates)
    sides = [(r, r.timing.workload, _rates(r.baseline, ceilings), _rates(r.timing, ceilings))
             for r in rows]
    flop_rows = [s for s in sides if s[1].flops and s[1].bytes
                 and s[2].tflops is not None and s[3].tflops is not None]
    byte_rows = [s for s in sides if all(s is not f for f in flop_rows) and s[1].bytes
                 and s[2].gbps is not None and s[3].gbps is not None]
    if not flop_rows and not byte_rows:
        return None
    # FLOPs without a byte count have no arithmetic intensity: named, not silently left out
    unplaced = [r.id for r, w, _, opt in sides if w.flops and not w.bytes and opt.tflops is not None]
    # grows with the pairs: the legend goes under the roofline (never over its points), and
    # the memory-only bars keep ~0.3 inch each
    legend_rows = -(-(len(flop_rows) + len(_CEILING_LABELS)) // 3)
    height = max(5.5, 4.5 + 0.18 * legend_rows, 0.3 * len(byte_rows) + 1.5)
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, height),
                                      gridspec_kw={"width_ratios": [3, 2]})
    intensities = [w.flops / w.bytes for _, w, _, _ in flop_rows] or [1.0]
    x_lo, x_hi = min(intensities + [0.1]) / 2, max(intensities + [1000.0]) * 2
    xs = [x_lo * (x_hi / x_lo) ** (i / 100) for i in range(101)]
    styles = ["-", "--", "-.", ":", (0, (5, 1, 1, 1))]  # roofs: black, told apart by dashes
    for (name, label), style in zip(_CEILING_LABELS.items(), styles):
        peak = ceilings.get(name)
        if peak:
            left.plot(xs, [min(bandwidth * x / 1e3, peak) for x in xs], linewidth=1,
                      color="black", linestyle=style, label=f"{label} roof {peak:.0f} TFLOP/s")
    markers = "osD^vP*Xph<>"  # pairs: a color and a marker each, so greyscale still tells them apart
    for i, (r, w, base_rates, opt_rates) in enumerate(flop_rows):
        ai = w.flops / w.bytes
        base, opt = base_rates.tflops, opt_rates.tflops
        color, marker = f"C{i % 10}", markers[i % len(markers)]
        left.plot([ai, ai], [base, opt], color=color, linewidth=1)
        left.scatter([ai], [base], facecolors="none", edgecolors=color, marker=marker)
        left.scatter([ai], [opt], color=color, marker=marker, label=r.id)
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("arithmetic intensity (FLOP/byte)")
    left.set_ylabel("TFLOP/s")
    left.set_title(f"Roofline (copy {bandwidth:.0f} GB/s, measured this run)"
                   + (f"\n{context}" if context else ""), fontsize=10)
    left.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.12), ncol=3,
                frameon=False)
    if unplaced:  # bottom right: under the roofs, where no pair's point sits
        left.text(0.99, 0.02, "\n".join(textwrap.wrap(
                      "not placed (FLOPs but no byte count): " + ", ".join(unplaced), 60)),
                  transform=left.transAxes, ha="right", va="bottom", fontsize=7)
    if byte_rows:
        labels = [r.id for r, _, _, _ in byte_rows]
        base = [base_rates.gbps for _, _, base_rates, _ in byte_rows]
        opt = [opt_rates.gbps for _, _, _, opt_rates in byte_rows]
        ys = range(len(byte_rows))
        # filled and open, as the points on the left: green and grey were one shade in greyscale
        done = right.barh([y + 0.2 for y in ys], opt, height=0.4, label="optimized", color="tab:green")
        first = right.barh([y - 0.2 for y in ys], base, height=0.4, label="baseline", color="white",
                           edgecolor="black", linewidth=0.8)
        for bars in (done, first):
            right.bar_label(bars, labels=[f"{b.get_width():.0f}" for b in bars], padding=2, fontsize=6)
        right.set_yticks(list(ys), labels, fontsize=8 if len(byte_rows) <= 40 else 6)
        right.axvline(bandwidth, color="black", linestyle="--", label="copy ceiling")
        right.set_xlabel("GB/s (bytes read + written)")
        right.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5))  # 6-digit labels: few
        right.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.12), ncol=3,
                     frameon=False)
        right.set_title("Memory-only pairs")
    else:
        right.axis("off")  # no title over an empty panel
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")  # the legend sits below the axes
    plt.close(fig)
    return path
