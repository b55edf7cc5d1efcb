"""Charts of a run: speedups with their intervals, and each pair against the ceilings."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")  # files only; no display needed (CI, GPU servers)
import matplotlib.pyplot as plt  # noqa: E402

_CEILING_LABELS = {"matmul_fp32_tflops": "fp32", "matmul_tf32_tflops": "tf32",
                   "matmul_bf16_tflops": "bf16", "matmul_fp16_tflops": "fp16",
                   "matmul_fp8_tflops": "fp8"}


def _measured(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["status"] == "ok" and "speedup" in r]


def speedups(rows: list[dict[str, Any]], path: Path) -> Path | None:
    """Horizontal bars of each example's speedup with its 95% interval (log scale)."""
    rows = _measured(rows)
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: r["speedup"])
    labels = [r["id"] + (" [teaching]" if r.get("teaching") else "") for r in rows]
    values = [r["speedup"] for r in rows]
    lo = [r["speedup"] - r["speedup_ci"][0] for r in rows]
    hi = [r["speedup_ci"][1] - r["speedup"] for r in rows]
    colors = ["tab:gray" if r.get("teaching") else
              "tab:red" if r.get("expectation", {}).get("status") == "regression" else
              "tab:green" if r["speedup"] >= 1 else "tab:orange" for r in rows]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.5))
    ax.barh(labels, values, xerr=[lo, hi], color=colors, capsize=3)
    for y, r in enumerate(rows):
        stored = r.get("expectation", {}).get("stored_speedup")
        if stored:
            ax.plot([stored, stored], [y - 0.4, y + 0.4], color="black", linewidth=1.5)
    ax.axvline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(
        lambda v, _: f"{v:g}x" if v in (2, 3, 5, 20, 30, 50) else ""))
    ax.set_xlabel("speedup (baseline median / optimized median); black tick: stored expectation")
    ax.set_title("Speedup per pair (95% interval)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def roofline(rows: list[dict[str, Any]], ceilings: dict[str, float], path: Path) -> Path | None:
    """Left: pairs with FLOPs on a roofline (arithmetic intensity vs TFLOP/s) under the
    measured copy-bandwidth slope and matmul roofs. Right: pairs that only move bytes, as
    GB/s against the copy ceiling. Baseline = open circle, optimized = filled, joined."""
    rows = _measured(rows)
    bandwidth = ceilings.get("copy_gbps")
    if not rows or not bandwidth:
        return None
    flop_rows = [r for r in rows if r["workload"].get("flops") and r["workload"].get("bytes")]
    byte_rows = [r for r in rows if r not in flop_rows and r["workload"].get("bytes")]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5),
                                      gridspec_kw={"width_ratios": [3, 2]})
    intensities = [r["workload"]["flops"] / r["workload"]["bytes"] for r in flop_rows] or [1.0]
    x_lo, x_hi = min(intensities + [0.1]) / 2, max(intensities + [1000.0]) * 2
    xs = [x_lo * (x_hi / x_lo) ** (i / 100) for i in range(101)]
    for name, label in _CEILING_LABELS.items():
        peak = ceilings.get(name)
        if peak:
            left.plot(xs, [min(bandwidth * x / 1e3, peak) for x in xs], linewidth=1,
                      label=f"{label} roof {peak:.0f} TFLOP/s")
    for i, r in enumerate(flop_rows):
        ai = r["workload"]["flops"] / r["workload"]["bytes"]
        base = r["workload"]["flops"] / (r["baseline_ms"] / 1e3) / 1e12
        opt = r["rates"]["tflops"]
        color = f"C{i % 10}"
        left.plot([ai, ai], [base, opt], color=color, linewidth=1)
        left.scatter([ai], [base], facecolors="none", edgecolors=color)
        left.scatter([ai], [opt], color=color, label=r["id"])
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("arithmetic intensity (FLOP/byte)")
    left.set_ylabel("TFLOP/s")
    left.set_title(f"Roofline (copy {bandwidth:.0f} GB/s, measured this run)")
    left.legend(fontsize=7, loc="lower right")
    if byte_rows:
        labels = [r["id"] for r in byte_rows]
        base = [r["workload"]["bytes"] / (r["baseline_ms"] / 1e3) / 1e9 for r in byte_rows]
        opt = [r["rates"]["gbps"] for r in byte_rows]
        ys = range(len(byte_rows))
        right.barh([y + 0.2 for y in ys], opt, height=0.4, label="optimized", color="tab:green")
        right.barh([y - 0.2 for y in ys], base, height=0.4, label="baseline", color="tab:gray")
        right.set_yticks(list(ys), labels, fontsize=8)
        right.axvline(bandwidth, color="black", linestyle="--", label="copy ceiling")
        right.set_xlabel("GB/s (bytes read + written)")
        right.legend(fontsize=7)
    else:
        right.axis("off")
    right.set_title("Memory-only pairs")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
