"""Turn a workload and a time into rates and a fraction of the measured device ceiling."""
from __future__ import annotations

from typing import Any

# Which measured matmul ceiling a FLOP count of each precision is compared against.
_MATMUL_CEILING = {"bf16": "matmul_bf16_tflops", "fp16": "matmul_bf16_tflops",
                   "tf32": "matmul_tf32_tflops", "fp32": "matmul_fp32_tflops",
                   "fp8": "matmul_fp8_tflops"}


def rates(workload: dict[str, Any], ms: float, ceilings: dict[str, float]) -> dict[str, Any]:
    """GB/s, TFLOP/s and units/s for one run() taking `ms`; % of the matching ceiling.

    `bound` (from the workload's arithmetic intensity) picks which rate is the headline.
    """
    seconds = ms / 1e3
    out: dict[str, Any] = {"bound": workload.get("bound", "units")}
    if workload.get("bytes"):
        out["gbps"] = workload["bytes"] / seconds / 1e9
    if workload.get("flops"):
        out["tflops"] = workload["flops"] / seconds / 1e12
    if workload.get("units"):
        out["units_per_s"] = workload["units"] / seconds
        out["unit_name"] = workload.get("unit_name") or "units"
    if out["bound"] == "memory" and ceilings.get("copy_gbps"):
        out["ceiling"] = "copy_gbps"
        out["pct_of_ceiling"] = 100 * out["gbps"] / ceilings["copy_gbps"]
    elif out["bound"] == "compute":
        name = _MATMUL_CEILING.get(workload.get("flops_dtype", "fp32"))
        if name and ceilings.get(name):
            out["ceiling"] = name
            out["pct_of_ceiling"] = 100 * out["tflops"] / ceilings[name]
    return out


def headline(r: dict[str, Any]) -> str:
    """The one rate worth a table cell: '3012 GB/s', '612.3 TFLOP/s', '41k tokens/s'."""
    if r.get("bound") == "memory" and "gbps" in r:
        return f"{r['gbps']:.0f} GB/s"
    if r.get("bound") == "compute" and "tflops" in r:
        return f"{r['tflops']:.1f} TFLOP/s"
    if "units_per_s" in r:
        value = r["units_per_s"]
        text = f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value / 1e3:.1f}k" if value >= 1e3 else f"{value:.1f}"
        return f"{text} {r['unit_name']}/s"
    return "-"
