"""Turn a workload and a time into rates and a fraction of the measured device ceiling."""
from __future__ import annotations

from core.benchmark import Workload
from core.record import Rates

# Which measured matmul ceiling a FLOP count of each precision is compared against.
_MATMUL_CEILING = {"bf16": "matmul_bf16_tflops", "fp16": "matmul_bf16_tflops",
                   "tf32": "matmul_tf32_tflops", "fp32": "matmul_fp32_tflops",
                   "fp8": "matmul_fp8_tflops"}


def rates(workload: Workload, ms: float, ceilings: dict[str, float]) -> Rates:
    """GB/s, TFLOP/s and units/s for one run() taking `ms`; % of the matching ceiling.

    `bound` (from the workload's arithmetic intensity) picks which rate is the headline.
    """
    seconds = ms / 1e3
    out = Rates(bound=workload.bound)
    if workload.bytes:
        out.gbps = workload.bytes / seconds / 1e9
    if workload.flops:
        out.tflops = workload.flops / seconds / 1e12
    if workload.units:
        out.units_per_s = workload.units / seconds
        out.unit_name = workload.unit_name or "units"
    if out.bound == "memory" and out.gbps is not None and ceilings.get("copy_gbps"):
        out.ceiling = "copy_gbps"
        out.pct_of_ceiling = 100 * out.gbps / ceilings["copy_gbps"]
    elif out.bound == "compute" and out.tflops is not None:
        name = _MATMUL_CEILING.get(workload.flops_dtype)
        if name and ceilings.get(name):
            out.ceiling = name
            out.pct_of_ceiling = 100 * out.tflops / ceilings[name]
    return out


def headline(r: Rates | None) -> str:
    """The one rate worth a table cell: '3012 GB/s', '612.3 TFLOP/s', '41k tokens/s'."""
    if r is None:
        return "-"
    if r.bound == "memory" and r.gbps is not None:
        return f"{r.gbps:.0f} GB/s"
    if r.bound == "compute" and r.tflops is not None:
        return f"{r.tflops:.1f} TFLOP/s"
    if r.units_per_s is not None:
        value = r.units_per_s
        text = f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value / 1e3:.1f}k" if value >= 1e3 else f"{value:.1f}"
        return f"{text} {r.unit_name}/s"
    return "-"
