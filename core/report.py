"""Render a run's results: the table a user reads, Markdown for READMEs, JSON for machines."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tabulate import tabulate

from core.metrics import headline

IMPLAUSIBLE_SPEEDUP = 20.0  # above this, outside `teaching` pairs, suspect the baseline
HEADERS = ["pair", "baseline ms", "optimized ms", "speedup", "optimized rate", "% ceiling",
           "verify", "expectation"]


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if value < 1 else f"{value:.3f}" if value < 100 else f"{value:.1f}"


def row(ex: dict[str, Any]) -> list[str]:
    label = ex["id"] + (" [teaching]" if ex.get("teaching") else "")
    if ex["status"] != "ok":
        verify = ex.get("verification", {})
        status = "FAILED" if ex["status"] == "failed" else "SKIPPED"
        if verify and not verify.get("ok", True):
            status = "MISMATCH"
        return [label, "-", "-", "-", "-", "-", status, "-"]
    rates = ex.get("rates", {})
    lo, hi = ex["speedup_ci"]
    pct = rates.get("pct_of_ceiling")
    verification = ex.get("verification", {})
    return [
        label, _ms(ex.get("baseline_ms")), _ms(ex.get("optimized_ms")),
        f"{ex['speedup']:.2f}x [{lo:.2f}-{hi:.2f}]", headline(rates),
        f"{pct:.0f}%" if pct is not None else "-",
        f"ok ({verification.get('max_rel_err', 0):.0e} rel)" if verification else "ok",
        ex.get("expectation", {}).get("status", "-"),
    ]


# NVML clock-event reasons that mean the GPU slowed itself down (power or thermal).
_SLOWDOWN_REASONS = {0x4: "software power cap", 0x8: "hardware slowdown",
                     0x20: "software thermal slowdown", 0x40: "hardware thermal slowdown",
                     0x80: "power brake"}


def throttle_notes(pairs: list[dict[str, Any]]) -> list[str]:
    lines = []
    for pair in pairs:
        reasons = pair.get("clocks_end", {}).get("throttle_reasons", 0)
        names = [name for bit, name in _SLOWDOWN_REASONS.items() if reasons & bit]
        if names:
            start, end = pair.get("clocks_start", {}), pair["clocks_end"]
            lines.append(f"THROTTLED {pair['pair']}: {', '.join(names)} at the end of the pair "
                         f"(SM clock {end.get('sm_clock_mhz')} MHz, {end.get('temperature_c')} °C; "
                         f"{start.get('temperature_c')} °C at its start); its numbers may be low")
    return lines


def notes(rows: list[dict[str, Any]]) -> list[str]:
    """Failures and skips with their reasons, gate messages, implausible-speedup warnings."""
    lines = []
    for ex in rows:
        if ex["status"] != "ok":
            lines.append(f"{ex['status'].upper()} {ex['id']}: {ex.get('reason', '')}")
            continue
        gate = ex.get("expectation", {})
        if gate.get("status") in ("regression", "inconclusive"):
            lines.append(f"{gate['status'].upper()} {ex['id']}: {gate['message']}")
        if ex["speedup"] > IMPLAUSIBLE_SPEEDUP and not ex.get("teaching"):
            lines.append(f"WARNING {ex['id']}: speedup {ex['speedup']:.1f}x exceeds "
                         f"{IMPLAUSIBLE_SPEEDUP:g}x; check the baseline is what a competent "
                         f"engineer would write first (or tag the pair `teaching`)")
    return lines


def table(rows: list[dict[str, Any]], fmt: str = "simple") -> str:
    return tabulate([row(ex) for ex in rows], headers=HEADERS, tablefmt=fmt, disable_numparse=True)


def render(result: dict[str, Any], fmt: str = "table") -> str:
    """`result` is RunResult.to_dict(); fmt is table | markdown | json."""
    if fmt == "json":
        return json.dumps(result, indent=2)
    rows = [ex for pair in result["pairs"] for ex in pair["examples"]]
    fp = result["fingerprint"]
    ceilings = result.get("ceilings", {})
    parts = [f"device: {fp.get('device')} (key {fp.get('hardware_key')}), torch {fp.get('torch')}, "
             f"CUDA {fp.get('cuda_runtime')}, driver {fp.get('driver', '-')}"]
    if ceilings:
        parts.append("ceilings (measured this run): " + ", ".join(
            f"{k.replace('_gbps', '').replace('_tflops', '')} "
            f"{v:.0f} {'GB/s' if k.endswith('gbps') else 'TFLOP/s'}" for k, v in ceilings.items()))
    parts.append("")
    parts.append(table(rows, "github" if fmt == "markdown" else "simple"))
    extra = notes(rows) + throttle_notes(result["pairs"])
    if extra:
        parts += ["", *extra]
    if result.get("expectation_updates"):
        parts += ["", "updated: " + ", ".join(result["expectation_updates"])]
    parts += ["", f"results: {result['run_dir']}/results.json"]
    return "\n".join(parts)


def _profile_lines(pairs: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for pair in pairs:
        profile = pair.get("profile")
        if not profile:
            continue
        lines += ["", f"### {pair['pair']} ({profile['mode']})", ""]
        if profile.get("status") == "skipped":
            lines.append(f"skipped: {profile['reason']}")
            continue
        if profile.get("minimal_error"):
            lines += ["torch.profiler run failed:", "```", profile["minimal_error"], "```"]
        for side, info in profile.get("sides", {}).items():
            lines += [f"**{side}**: trace `{info['trace']}`", ""]
            top = [[e["name"][:70], f"{e['calls_per_run']:g}", f"{e['us_per_run']:.1f}"]
                   for e in info["top"]]
            lines += [tabulate(top, headers=["kernel / op", "calls per run", "µs per run"],
                               tablefmt="github", disable_numparse=True), ""]
        for tool in ("ncu", "nsys"):
            entry = profile.get(tool)
            if not entry:
                continue
            if entry["status"] == "skipped":
                lines.append(f"{tool}: skipped ({entry['reason']})")
                continue
            for side, info in entry["sides"].items():
                lines.append(f"{tool} **{side}**: `{info['report']}`")
                if info.get("error"):
                    lines += ["```", info["error"], "```"]
                kernels = [[k["kernel"][:60], _fmt(k.get("duration_us"), ".1f"),
                            _fmt(k.get("dram_pct"), ".0f"), _fmt(k.get("sm_pct"), ".0f"),
                            _fmt(k.get("achieved_occupancy_pct"), ".0f")]
                           for k in info.get("kernels", [])]
                if kernels:
                    lines += ["", tabulate(kernels, headers=["kernel", "µs", "DRAM %", "SM %",
                                                             "occupancy %"], tablefmt="github", disable_numparse=True), ""]
    return lines


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def summary_markdown(result: dict[str, Any], charts: list[str] | None = None) -> str:
    """summary.md: environment, ceilings, the table, failures and notes, profiles."""
    rows = [ex for pair in result["pairs"] for ex in pair["examples"]]
    fp = result["fingerprint"]
    env_keys = ("device", "hardware_key", "compute_capability", "sm_count", "memory_gib",
                "l2_mib", "driver", "cuda_runtime", "torch", "nvcc", "git_commit", "host")
    lines = [f"# aisp run {Path(result['run_dir']).name}", ""]
    if result.get("interrupted"):
        lines += ["**Interrupted**: the pairs below finished before Ctrl-C.", ""]
    lines += ["## Environment", "",
              tabulate([[k, fp.get(k)] for k in env_keys if fp.get(k) is not None],
                       tablefmt="github", headers=["", ""]), ""]
    if result.get("ceilings"):
        lines += ["## Ceilings measured in this run", "",
                  tabulate([[k, f"{v:.1f}"] for k, v in result["ceilings"].items()],
                           headers=["ceiling", "value"], tablefmt="github", disable_numparse=True), ""]
    lines += ["## Results", "", table(rows, "github"), ""]
    extra = notes(rows) + throttle_notes(result["pairs"])
    if extra:
        lines += ["## Failures and notes", "", *[f"- {line}" for line in extra], ""]
    profile = _profile_lines(result["pairs"])
    if profile:
        lines += ["## Profiles", *profile, ""]
    if charts:
        lines += ["## Charts", "", *[f"![{name}]({name})" for name in charts], ""]
    lines += ["Raw samples, fingerprint and profiles: `results.json`.", ""]
    return "\n".join(lines)


def write_reports(result: dict[str, Any], run_dir: Path) -> list[Path]:
    """summary.md and the charts next to results.json; a chart that fails is skipped."""
    from core import plots

    run_dir = Path(run_dir)
    rows = [ex for pair in result["pairs"] for ex in pair["examples"]]
    charts = [chart for chart in (
        plots.speedups(rows, run_dir / "speedups.png"),
        plots.roofline(rows, result.get("ceilings", {}), run_dir / "roofline.png")) if chart]
    summary = run_dir / "summary.md"
    summary.write_text(summary_markdown(result, [c.name for c in charts]))
    return [summary, *charts]
