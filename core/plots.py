"""Charts of a run: speedups with their intervals, and each pair against the ceilings."""
from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")  # files only; no display needed (CI, GPU servers)
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from core import goals  # noqa: E402
from core.metrics import rates as side_rates  # noqa: E402
from core.record import ExampleResult, Rates, SideResult  # noqa: E402

_CEILING_LABELS = {"matmul_fp32_tflops": "fp32", "matmul_tf32_tflops": "tf32",
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


def speedups(rows: list[ExampleResult], path: Path) -> Path | None:
    """Horizontal bars of each example's speedup with its 95% interval (log scale)."""
    rows = _measured(rows)
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: r.speedup)
    labels = [r.id + (" [teaching]" if r.teaching else "") for r in rows]
    values = [r.speedup for r in rows]
    lo = [r.speedup - _ci(r)[0] for r in rows]
    hi = [_ci(r)[1] - r.speedup for r in rows]
    colors = ["tab:gray" if r.teaching else
              "tab:red" if r.expectation is not None and r.expectation.status == "regression" else
              "tab:green" if r.speedup >= 1 else "tab:orange" for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.3 * len(rows) + 1.5))
    bars = ax.barh(labels, values, xerr=[lo, hi], color=colors, capsize=3)
    ax.bar_label(bars, labels=[f"{v:.2f}x" for v in values], padding=8, fontsize=7)
    ax.tick_params(axis="y", labelsize=7 if len(rows) > 40 else 9)
    ax.margins(y=0.5 / max(len(rows), 1))
    for y, r in enumerate(rows):
        stored = r.expectation.stored_speedup if r.expectation is not None else None
        stored = stored if goals.GOALS.get(r.goal, goals.GOALS[goals.DEFAULT]).gates_time else None  # else another goal's ratio
        if stored:
            ax.plot([stored, stored], [y - 0.4, y + 0.4], color="black", linewidth=1.5)
    ax.axvline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(
        lambda v, _: f"{v:g}x" if v in (2, 3, 5, 20, 30, 50) else ""))
    ax.set_xlabel("speedup (baseline median / optimized median); black tick: stored expectation")
    ax.set_title("Speedup per pair (95% interval)")
    ax.legend(handles=[Patch(color=c, label=t) for c, t in (
        ("tab:green", "faster"), ("tab:orange", "slower"), ("tab:red", "regression (gate)"),
        ("tab:gray", "teaching"))], fontsize=7, ncol=4, frameon=False, loc="upper left",
        bbox_to_anchor=(0.0, -0.6 / (0.3 * len(rows) + 1.5)))
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")  # the legend sits below the axes
    plt.close(fig)
    return path


def roofline(rows: list[ExampleResult], ceilings: dict[str, float], path: Path) -> Path | None:
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
    # grows with the pairs: the legend goes under the roofline (never over its points), and
    # the memory-only bars keep ~0.3 inch each
    legend_rows = -(-(len(flop_rows) + len(_CEILING_LABELS)) // 3)
    height = max(5.5, 4.5 + 0.18 * legend_rows, 0.3 * len(byte_rows) + 1.5)
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, height),
                                      gridspec_kw={"width_ratios": [3, 2]})
    intensities = [w.flops / w.bytes for _, w, _, _ in flop_rows] or [1.0]
    x_lo, x_hi = min(intensities + [0.1]) / 2, max(intensities + [1000.0]) * 2
    xs = [x_lo * (x_hi / x_lo) ** (i / 100) for i in range(101)]
    for name, label in _CEILING_LABELS.items():
        peak = ceilings.get(name)
        if peak:
            left.plot(xs, [min(bandwidth * x / 1e3, peak) for x in xs], linewidth=1,
                      label=f"{label} roof {peak:.0f} TFLOP/s")
    for i, (r, w, base_rates, opt_rates) in enumerate(flop_rows):
        ai = w.flops / w.bytes
        base, opt = base_rates.tflops, opt_rates.tflops
        color = f"C{i % 10}"
        left.plot([ai, ai], [base, opt], color=color, linewidth=1)
        left.scatter([ai], [base], facecolors="none", edgecolors=color)
        left.scatter([ai], [opt], color=color, label=r.id)
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("arithmetic intensity (FLOP/byte)")
    left.set_ylabel("TFLOP/s")
    left.set_title(f"Roofline (copy {bandwidth:.0f} GB/s, measured this run)")
    left.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.12), ncol=3,
                frameon=False)
    if byte_rows:
        labels = [r.id for r, _, _, _ in byte_rows]
        base = [base_rates.gbps for _, _, base_rates, _ in byte_rows]
        opt = [opt_rates.gbps for _, _, _, opt_rates in byte_rows]
        ys = range(len(byte_rows))
        done = right.barh([y + 0.2 for y in ys], opt, height=0.4, label="optimized", color="tab:green")
        first = right.barh([y - 0.2 for y in ys], base, height=0.4, label="baseline", color="tab:gray")
        for bars in (done, first):
            right.bar_label(bars, labels=[f"{b.get_width():.0f}" for b in bars], padding=2, fontsize=6)
        right.set_yticks(list(ys), labels, fontsize=8 if len(byte_rows) <= 40 else 6)
        right.axvline(bandwidth, color="black", linestyle="--", label="copy ceiling")
        right.set_xlabel("GB/s (bytes read + written)")
        right.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.12), ncol=3,
                     frameon=False)
    else:
        right.axis("off")
    right.set_title("Memory-only pairs")
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")  # the legend sits below the axes
    plt.close(fig)
    return path
