"""Turn a workload and a time into rates and a fraction of the measured device ceiling."""
from __future__ import annotations

from core.benchmark import Workload
from core.record import Rates

NETWORK_CEILING = "nccl_allreduce_gbps"  # peak all-reduce bus bandwidth, `hw peak --gpus N`
# The measured ceiling each link of Workload.link is judged against (core.hardware).
LINK_CEILINGS = {"h2d": "h2d_pinned_gbps", "d2h": "d2h_pinned_gbps",
                 "p2p_oneway": "p2p_oneway_gbps", "p2p_bidir": "p2p_bidir_gbps"}

# Which measured matmul ceiling a FLOP count of each precision is compared against.
MATMUL_CEILINGS = {"bf16": "matmul_bf16_tflops", "fp16": "matmul_bf16_tflops",
                   "tf32": "matmul_tf32_tflops", "fp32": "matmul_fp32_tflops",
                   "fp8": "matmul_fp8_tflops"}


FMA_CEILING = "fma_fp32_tflops"  # the fp32 CUDA cores' FMA rate (core.fma_ceiling)


def compute_ceiling(dtype: str, ceilings: dict[str, float]) -> str | None:
    """The measured roof FLOPs of `dtype` are compared with: its matmul ceiling, and for fp32
    the FMA ceiling where that is higher (cuBLAS's fp32 GEMM sustains ~52 TFLOP/s on an H100,
    below the CUDA cores' FMA rate, and an FMA-only kernel ran 102% of it)."""
    name = MATMUL_CEILINGS.get(dtype)
    if dtype == "fp32" and ceilings.get(FMA_CEILING, 0.0) > ceilings.get(name or "", 0.0):
        return FMA_CEILING
    return name


def ridge(workload: Workload, ceilings: dict[str, float]) -> float | None:
    """FLOP per byte where the measured roofs of the workload's precision meet (None when
    this run has no such ceilings): above it a kernel is compute-bound, below memory-bound.
    On an H100: fp32 51 TFLOP/s / 3.0 TB/s ≈ 17; bf16 ≈ 265."""
    name = compute_ceiling(workload.flops_dtype, ceilings)
    if not name or not ceilings.get(name) or not ceilings.get("copy_gbps"):
        return None
    return ceilings[name] * 1e12 / (ceilings["copy_gbps"] * 1e9)


def bound(workload: Workload, ceilings: dict[str, float]) -> str:
    """'memory', 'compute' or 'units': from the measured ridge of the workload's precision
    where this run measured it, else from the workload's own rule of thumb."""
    if workload.bound in ("network", "link"):
        return workload.bound
    point = ridge(workload, ceilings)
    if point is None or not (workload.flops and workload.bytes):
        return workload.bound
    return "compute" if workload.flops / workload.bytes > point else "memory"


def rates(workload: Workload, ms: float, ceilings: dict[str, float]) -> Rates:
    """GB/s, TFLOP/s and units/s for one run() taking `ms`; % of both roofs where measured.

    `bound` (the arithmetic intensity against the measured ridge) picks which rate is the
    headline and which percentage is `pct_of_ceiling`; both percentages are kept.
    """
    seconds = ms / 1e3
    out = Rates(bound=bound(workload, ceilings))
    if workload.bytes:
        out.gbps = workload.bytes / seconds / 1e9
    if workload.flops:
        out.tflops = workload.flops / seconds / 1e12
    if workload.units:
        out.units_per_s = workload.units / seconds
        out.unit_name = workload.unit_name or "units"
    if out.gbps is not None and ceilings.get("copy_gbps"):
        out.pct_of_copy = 100 * out.gbps / ceilings["copy_gbps"]
    name = compute_ceiling(workload.flops_dtype, ceilings)
    if out.tflops is not None and name and ceilings.get(name):
        out.pct_of_matmul = 100 * out.tflops / ceilings[name]
    if workload.bus_bytes:
        out.bus_gbps = workload.bus_bytes / seconds / 1e9
        if ceilings.get(NETWORK_CEILING):
            out.pct_of_network = 100 * out.bus_gbps / ceilings[NETWORK_CEILING]
    if workload.link_bytes:
        out.link = workload.link
        out.link_gbps = workload.link_bytes / seconds / 1e9
        link_ceiling = LINK_CEILINGS.get(workload.link)
        if link_ceiling and ceilings.get(link_ceiling):
            out.pct_of_link = 100 * out.link_gbps / ceilings[link_ceiling]
    if out.bound == "link" and out.pct_of_link is not None:
        out.ceiling, out.pct_of_ceiling = LINK_CEILINGS[workload.link], out.pct_of_link
    elif out.bound == "network" and out.pct_of_network is not None:
        out.ceiling, out.pct_of_ceiling = NETWORK_CEILING, out.pct_of_network
    elif out.bound == "memory" and out.pct_of_copy is not None:
        out.ceiling, out.pct_of_ceiling = "copy_gbps", out.pct_of_copy
    elif out.bound == "compute" and out.pct_of_matmul is not None:
        out.ceiling, out.pct_of_ceiling = name, out.pct_of_matmul
    return out


def headline(r: Rates | None) -> str:
    """The one rate worth a table cell: '3012 GB/s', '612.3 TFLOP/s', '41k tokens/s'."""
    if r is None:
        return "-"
    if r.bound == "network" and r.bus_gbps is not None:
        return f"{r.bus_gbps:.0f} GB/s bus"
    if r.bound == "link" and r.link_gbps is not None:
        return f"{r.link_gbps:.1f} GB/s {r.link}"
    if r.bound == "memory" and r.gbps is not None:
        return f"{r.gbps:.0f} GB/s"
    if r.bound == "compute" and r.tflops is not None:
        return f"{r.tflops:.1f} TFLOP/s"
    if r.units_per_s is not None:
        value = r.units_per_s
        text = f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value / 1e3:.1f}k" if value >= 1e3 else f"{value:.1f}"
        return f"{text} {r.unit_name}/s"
    return "-"
