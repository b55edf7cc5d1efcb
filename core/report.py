"""Render a run's results: the table a user reads, Markdown for READMEs, JSON for machines."""
from __future__ import annotations

import json
from pathlib import Path

from tabulate import tabulate

from core import atomic, goals
from core.gate import CPU_BOUND_TOLERANCE
from core.hardware import WINDOW_MS
from core.memory import mib
from core.metrics import headline
from core.record import ExampleResult, PairResult, RunRecord, Verification

IMPLAUSIBLE_SPEEDUP = 20.0  # above this, outside `teaching` pairs, suspect the baseline
ABOVE_COPY_PCT = 105.0  # bytes per second above this share of the HBM copy ceiling: not HBM
# FLOP/s above this share of the matmul ceiling (8192³ cuBLAS, its best round-length window of a
# second: core.hardware.WINDOW_MS); against the sustained median ch02's TF32 GEMM measured 117%
ABOVE_MATMUL_PCT = 105.0
HEADERS = ["pair", "baseline ms", "optimized ms", "speedup", "optimized rate", "% ceiling",
           "verify", "expectation"]


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if value < 1 else f"{value:.3f}" if value < 100 else f"{value:.1f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def row(ex: ExampleResult) -> list[str]:
    label = ex.id + (" [teaching]" if ex.teaching else "")
    verification = ex.verification
    if ex.status != "ok":
        status = "FAILED" if ex.status == "failed" else "SKIPPED"
        if verification is not None and not verification.ok:
            status = "MISMATCH"
        return [label, "-", "-", "-", "-", "-", status, "-"]
    rates = ex.timing.rates if ex.timing else None
    pct = rates.pct_of_ceiling if rates else None
    if ex.speedup is not None:
        lo, hi = ex.speedup_ci or (ex.speedup, ex.speedup)
        speedup = f"{ex.speedup:.2f}x [{lo:.2f}-{hi:.2f}]"
        speedup += " NOISY" if ex.noisy else ""
        speedup += " cpu-bound" if ex.cpu_bound else " host-bound" if ex.host_bound else ""
        speedup += " graph" if ex.timing and ex.timing.graph_calls else ""
        speedup += " simulated" if ex.simulated else ""
        speedup = goals.goal_of(ex.goal).cell(ex, speedup)
    else:
        speedup = "-"
    return [
        label, _ms(ex.baseline_ms), _ms(ex.optimized_ms), speedup, headline(rates),
        f"{pct:.0f}%" if pct is not None else "-",
        verify_cell(verification, ex.declarations.precision,
                    ex.declarations.tolerance is not None),
        ex.expectation.status if ex.expectation is not None else "-",
    ]


def verify_cell(verification: Verification | None, precision: str = "",
                declared: bool = False) -> str:
    """`ok (exact)` or `ok (37% of tol)`: the worst error as a share of the pair's tolerance.
    (A maximum relative error would read 1e+10 wherever an expected element is near zero.)
    A declared precision change, or a declared tolerance, also shows what it costs: the
    relative RMS error against the baseline (`ok (37% of tol; bf16: rms 0.41%)`)."""
    if verification is None:
        return "ok"
    used = verification.tolerance_used
    if verification.max_abs_err == 0.0:
        return "ok (exact)"
    if used is None:  # a result from before tolerance_used was recorded
        return "ok"
    cell = f"{used:.0%} of tol" if used >= 0.01 else "<1% of tol"
    if precision or declared:
        cell += f"; {precision + ': ' if precision else ''}rms {verification.rel_rms_err:.2%}"
    return f"ok ({cell})"


# NVML clock-event reasons that mean the GPU slowed itself down (power or thermal).
_SLOWDOWN_REASONS = {0x4: "software power cap", 0x8: "hardware slowdown",
                     0x20: "software thermal slowdown", 0x40: "hardware thermal slowdown",
                     0x80: "power brake"}


# What one pair may take in a full run (verification, checks and timing of every side), so
# that the whole suite fits a developer's or CI's GPU time (issue: 15 minutes on one H100).
PAIR_BUDGET_S = 20.0


def slow_notes(record: RunRecord) -> list[str]:
    """A full run's pairs over PAIR_BUDGET_S whose baseline does not say why (`slow_because`)."""
    if record.options.get("mode", "full") != "full" or record.options.get("profile"):
        return []  # smoke runs shrink shapes; profiled runs add the profilers' own time
    return [f"SLOW {p.pair}: {p.duration_s:.0f} s, above the {PAIR_BUDGET_S:.0f} s a pair may "
            f"take; shrink its regime while it still shows the lesson, or declare "
            f"slow_because = \"why\" on its baseline"
            for p in record.pairs
            if p.status == "ok" and p.duration_s > PAIR_BUDGET_S and not p.slow_because]


def throttle_notes(pairs: list[PairResult]) -> list[str]:
    lines = []
    for pair in pairs:
        reasons = pair.clocks_end.get("throttle_reasons") or 0
        names = [name for bit, name in _SLOWDOWN_REASONS.items() if reasons & bit]
        if names:
            start, end = pair.clocks_start, pair.clocks_end
            lines.append(f"THROTTLED {pair.pair}: {', '.join(names)} at the end of the pair "
                         f"(SM clock {end.get('sm_clock_mhz')} MHz, {end.get('temperature_c')} °C; "
                         f"{start.get('temperature_c')} °C at its start); its numbers may be low")
    return lines


def notes(rows: list[ExampleResult], smoke: bool = False) -> list[str]:
    """Failures and skips with their reasons, gate messages, implausible-speedup warnings. A
    smoke run (`smoke`) gates and stores nothing, and its one closing line says so: no note per
    row that its few samples make it NOISY, and none that says how a row is gated."""
    lines = []
    for ex in rows:
        if ex.status != "ok":
            lines.append(f"{ex.status.upper()} {ex.id}: {ex.reason}")
            continue
        gate = ex.expectation
        if gate is not None and gate.status in ("regression", "inconclusive", "negative", "rules changed"):
            lines.append(f"{gate.status.upper()} {ex.id}: {gate.message}")
        if ex.noisy and not smoke:
            lines.append(f"NOISY {ex.id}: {ex.noisy}; the speedup is not a result (never stored)")
        goal = goals.goal_of(ex.goal)
        if ex.simulated:
            lines.append(f"SIMULATED {ex.id}: {ex.simulated}; its {goal.noun} comes from a "
                         f"simulation over measured costs, not from the work itself")
        if ex.other_host:
            lines.append(f"OTHER HOST {ex.id}: its expectation was {ex.other_host}; a host-paced "
                         f"result measures the host as much as the GPU, so its verdict judges "
                         f"the hosts too")
        if ex.cpu_bound:
            gated = ("" if smoke else f", so it is gated with a {CPU_BOUND_TOLERANCE:.0%} tolerance"
                     if goal.gates_time else f" (the gate judges its goal, {ex.goal})")
            lines.append(f"CPU-BOUND {ex.id}: {ex.cpu_bound}; the speedup depends on the host's "
                         f"CPU (model and cores in the provenance) as much as on the GPU{gated}")
        for side in ([] if ex.cpu_bound else ex.host_bound):
            timing = ex.baseline if side == "baseline" else ex.timing
            advice = goal.host_bound_advice()
            lines.append(f"HOST-BOUND {ex.id}: the {side} side's host time per call "
                         f"({timing.host_ms * 1e3:.1f} µs) reaches its GPU time per call "
                         f"({timing.median_ms * 1e3:.1f} µs): its samples measure the host's "
                         f"launches, not the GPU ({advice})")
        if ex.baseline is not None and ex.timing is not None and (
                ex.baseline.gpu_busy_pct is not None or ex.timing.gpu_busy_pct is not None):
            lines.append(f"GPU BUSY {ex.id}: kernels ran {_pct(ex.baseline.gpu_busy_pct)} of the "
                         f"time with the baseline, {_pct(ex.timing.gpu_busy_pct)} with the "
                         f"optimized side (NVML utilization while each side ran back to back)")
        lines += goal.notes(ex)
        if ex.timing is not None and ex.timing.graph_calls and ex.baseline is not None:
            lines.append(f"GRAPH {ex.id}: timed by CUDA-graph replay ({ex.baseline.graph_calls} "
                         f"baseline / {ex.timing.graph_calls} optimized calls per replay): GPU "
                         f"time per call without the host's launch"
                         + (f" (an eager call costs the host {ex.timing.host_ms * 1e3:.1f} µs)"
                            if ex.timing.host_ms is not None else ""))
        for side, timing in (("baseline", ex.baseline), ("optimized", ex.timing)):
            rates = timing.rates if timing is not None else None
            if rates is not None and (rates.pct_of_copy or 0) > ABOVE_COPY_PCT:
                lines.append(f"ABOVE CEILING {ex.id}: the {side} side moves {rates.gbps:.0f} GB/s, "
                             f"{rates.pct_of_copy:.0f}% of the measured HBM copy ceiling: its data "
                             f"stays in L2 between calls (a working set below the L2 size), or "
                             f"the workload counts bytes it does not move")
            if rates is not None and (rates.pct_of_matmul or 0) > ABOVE_MATMUL_PCT:
                roof = (f"fp32 FMA ceiling measured this run (an FMA-only Triton kernel, its "
                        f"best {WINDOW_MS:g} ms window)" if rates.ceiling == "fma_fp32_tflops" else
                        f"{(rates.ceiling or 'matmul').replace('matmul_', '').replace('_tflops', '')} "
                        f"matmul ceiling measured this run (8192³ cuBLAS, its best {WINDOW_MS:g} ms window)")
                lines.append(f"ABOVE CEILING {ex.id}: the {side} side runs {rates.tflops:.0f} "
                             f"TFLOP/s, {rates.pct_of_matmul:.0f}% of the {roof}: "
                             f"it runs at higher clocks than the ceiling's"
                             + (f" (SM {timing.sm_clock_mhz:.0f} MHz during its samples)"
                                if timing.sm_clock_mhz else "")
                             + ", or the workload counts FLOPs it does not do")
        if ex.speedup is not None and ex.speedup > IMPLAUSIBLE_SPEEDUP and not ex.teaching:
            lines.append(f"WARNING {ex.id}: speedup {ex.speedup:.1f}x exceeds "
                         f"{IMPLAUSIBLE_SPEEDUP:g}x; check the baseline is what a competent "
                         f"engineer would write first (or tag the pair `teaching`)")
    return lines


def table(rows: list[ExampleResult], fmt: str = "simple") -> str:
    return tabulate([row(ex) for ex in rows], headers=HEADERS, tablefmt=fmt, disable_numparse=True)


def render(record: RunRecord, fmt: str = "table") -> str:
    """fmt is table | markdown | json (the record's JSON form, as in results.json)."""
    if fmt == "json":
        return json.dumps(record.to_dict(), indent=2)
    rows = record.rows
    fp = record.fingerprint
    ceilings = record.ceilings
    parts = [f"device: {fp.get('device')} (key {fp.get('hardware_key')}), torch {fp.get('torch')}, "
             f"CUDA {fp.get('cuda_runtime')}, driver {fp.get('driver', '-')}"]
    if ceilings:
        parts.append("ceilings (measured this run): " + ", ".join(
            f"{k.replace('_gbps', '').replace('_tflops', '')} "
            f"{v:.0f} {'GB/s' if k.endswith('gbps') else 'TFLOP/s'}" for k, v in ceilings.items()))
    parts.append("")
    parts.append(table(rows, "github" if fmt == "markdown" else "simple"))
    extra = run_notes(record)
    if extra:
        parts += ["", *extra]
    if record.expectation_updates:
        parts += ["", "updated: " + ", ".join(record.expectation_updates)]
    if record.expectation_skips:
        parts += ["", *[f"NOT STORED {line}" for line in record.expectation_skips]]
    if record.options.get("mode") == "smoke":
        line = ("smoke run: times come from few samples (and maybe smaller shapes), so they are "
                "neither gated nor stored; failures and verification count as usual")
        shared = sum(1 for p in record.pairs if p.status != "skipped" and not p.integrity.escape_check)
        if shared:
            line += (f"; {shared} pair{'s' if shared > 1 else ''} ran beside others, without "
                     f"the escaped-work check (other pairs' kernels share the GPU; a full run or "
                     f"--jobs 1 applies it)")
        parts += ["", line]
    spent = time_line(record)
    if spent:
        parts += ["", spent]
    parts += ["", f"results: {record.run_dir}/results.json"]
    return "\n".join(parts)


def human_duration(seconds: float) -> str:
    """`2 min 30 s`, or `4.2 s` under a minute."""
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{seconds:.1f} s"


def time_line(record: RunRecord, slowest: int = 3) -> str:
    """Where the run's time went: the whole, the pairs, and the slowest pairs with the
    harness's share of each (verification, checks between timing rounds, the timing)."""
    ran = [p for p in record.pairs if p.status != "skipped"]
    if not record.wall_s or not ran:
        return ""
    pairs_s = sum(p.duration_s for p in record.pairs)
    def parts(p: PairResult) -> str:
        i = p.integrity
        setups = (f", {i.state_setup_s:.0f} of them re-running setup() for state checks"
                  if i.state_setup_s >= 1 else "")
        return (f"{p.pair} {p.duration_s:.0f} s (verify {i.verify_s:.0f}, checks and fresh inputs "
                f"{i.checks_s + i.fresh_s:.0f}{setups}, timing {i.timing_s:.0f})")
    top = sorted(ran, key=lambda p: -p.duration_s)[:slowest]
    where = (f"{human_duration(pairs_s)} in pairs, the rest probing, ceilings, builds and precompiling"
             if pairs_s <= record.wall_s else
             f"the pairs' own times add up to {human_duration(pairs_s)}: several ran at a time "
             f"(smoke), or some were kept from the run this one resumed")
    return (f"time: {human_duration(record.wall_s)} for {len(ran)} pair{'s' if len(ran) > 1 else ''} run "
            f"({where}); slowest: " + ", ".join(parts(p) for p in top))


def _profile_lines(pairs: list[PairResult]) -> list[str]:
    lines: list[str] = []
    for pair in pairs:
        profile = pair.profile
        if not profile:
            continue
        lines += ["", f"### {pair.pair} ({profile['mode']})", ""]
        if profile.get("status") in ("skipped", "failed"):
            lines.append(f"{profile['status']}: {profile['reason']}")
            continue
        if profile["mode"] == "memory":
            lines += _memory_profile_lines(profile)
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
                            _fmt(k.get("achieved_occupancy_pct"), ".0f"), _fmt(k.get("waves"), ".2f")]
                           for k in info.get("kernels", [])]
                if kernels:
                    lines += ["", tabulate(kernels, headers=["kernel", "µs", "DRAM %", "SM %",
                                                             "occupancy %", "waves"], tablefmt="github", disable_numparse=True), ""]
    return lines


def _memory_profile_lines(profile: dict) -> list[str]:
    lines: list[str] = []
    for side, info in profile.get("sides", {}).items():
        lines += [f"**{side}**: allocator snapshot `{info['snapshot']}` (pytorch.org/memory_viz)", ""]
        top = [[site["site"][:80], mib(site["bytes"])] for site in info["top"]]
        if top:
            lines += [tabulate(top, headers=["allocation site", "held at the peak"],
                               tablefmt="github", disable_numparse=True), ""]
    return lines


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def summary_markdown(record: RunRecord, charts: list[str] | None = None) -> str:
    """summary.md: environment, ceilings, the table, failures and notes, profiles."""
    rows = record.rows
    fp = record.fingerprint
    env_keys = ("device", "hardware_key", "compute_capability", "sm_count", "memory_gib",
                "l2_mib", "driver", "cuda_runtime", "torch", "nvcc", "git_commit", "host")
    lines = [f"# aisp run {Path(record.run_dir).name}", ""]
    if record.interrupted:
        lines += ["**Interrupted**: the pairs below finished before Ctrl-C.", ""]
    if record.options.get("mode") == "smoke":
        lines += ["**Smoke run**: few samples and possibly smaller shapes; no time here is "
                  "gated or stored (failures and verification count as usual).", ""]
    lines += ["## Environment", "",
              tabulate([[k, fp.get(k)] for k in env_keys if fp.get(k) is not None],
                       tablefmt="github", headers=["", ""]), ""]
    if record.ceilings:
        conditions = fp.get("ceiling_conditions", {})

        def at(key: str) -> list[str]:
            c = conditions.get(key, {})
            names = [n for bit, n in _SLOWDOWN_REASONS.items() if (c.get("throttle_reasons") or 0) & bit]
            return [str(c.get("sm_clock_mhz", "-")), ", ".join(names) or ("none" if c else "-")]
        lines += [f"## Ceilings measured in this run (each the best {WINDOW_MS:g} ms window of 1 s)", "",
                  tabulate([[k, f"{v:.1f}", *at(k)] for k, v in record.ceilings.items()],
                           headers=["ceiling", "value", "SM MHz at its end", "slowdowns"],
                           tablefmt="github", disable_numparse=True), ""]
    lines += ["## Results", "", table(rows, "github"), ""]
    extra = run_notes(record)
    if extra:
        lines += ["## Failures and notes", "", *[f"- {line}" for line in extra], ""]
    profile = _profile_lines(record.pairs)
    if profile:
        lines += ["## Profiles", *profile, ""]
    if charts:
        lines += ["## Charts", "", *[f"![{name}]({name})" for name in charts], ""]
    lines += ["Raw samples, fingerprint and profiles: `results.json`.", ""]
    return "\n".join(lines)


def run_notes(record: RunRecord) -> list[str]:
    """Every note a run's table or summary ends with: its rows', throttling, pairs over budget."""
    smoke = record.options.get("mode") == "smoke"
    return notes(record.rows, smoke=smoke) + throttle_notes(record.pairs) + slow_notes(record)


def chart_context(record: RunRecord) -> str:
    """A chart's second title line: device, how many GPUs the multi-GPU pairs ran on, commit,
    run id and, for a smoke run, that its times are not results."""
    fp = record.fingerprint
    words = [str(fp.get("device") or "?"), f"commit {fp.get('git_commit') or '?'}",
             f"run {Path(str(record.run_dir)).name}"]
    gpus = record.options.get("gpus") or fp.get("gpu_count") or 1  # --gpus N, else all present
    if int(gpus) > 1:
        words.insert(1, f"multi-GPU pairs on {gpus} GPUs")
    if record.options.get("mode") == "smoke":
        words.append("smoke run: few samples, not gated")
    return " · ".join(words)


def write_reports(record: RunRecord, run_dir: Path | None = None) -> list[Path]:
    """summary.md and the charts next to results.json (in `run_dir`, default the record's);
    a chart with nothing to show is left out."""
    from core import plots

    run_dir = Path(record.run_dir if run_dir is None else run_dir)
    rows = record.rows
    context = chart_context(record)
    charts = [chart for chart in (
        plots.speedups(rows, run_dir / "speedups.png", context),
        plots.roofline(rows, record.ceilings, run_dir / "roofline.png", context)) if chart]
    summary = run_dir / "summary.md"
    atomic.write_text(summary, summary_markdown(record, [c.name for c in charts]))
    return [summary, *charts]
