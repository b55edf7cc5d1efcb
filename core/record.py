"""The typed run record: what a `bench run` measured, read by every writer.

    RunRecord           one `bench run`: device fingerprint, ceilings, builds, pairs
      PairResult        one pair (a baseline and its variants), as the child reported it
        SideResult      the baseline's timing: stats, workload, rates
        ExampleResult   one optimized variant: verification, timing, speedup, gate verdict
        IntegrityReport the checks that ran on the pair, with their seeds and what they cost

The child process builds a PairResult, the runner adds rates and gate verdicts, and report,
plots, compare and expectations read these objects. `to_dict()`/`from_dict()` are the JSON
form (results.json, results.jsonl): plain keys, stable across versions where possible.
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from core.benchmark import Workload
from core.compile_time import ColdStart, median_s
from core.goodput import GoodputStats, goodput_ratio
from core.expectations import GateResult
from core.memory import Footprint
from core.stats import SampleStats

Status = str  # "ok" | "failed" | "skipped"
HOST_BOUND = 0.8  # a side whose host time per call is this share of its GPU time is host-bound


@dataclass
class Rates:
    """Rates of one side at its median time, and the share of the matching ceiling."""

    bound: str = "units"  # memory | compute | units
    gbps: float | None = None
    tflops: float | None = None
    units_per_s: float | None = None
    unit_name: str | None = None
    ceiling: str | None = None  # the key in the run's ceilings it is judged against
    pct_of_ceiling: float | None = None  # of that ceiling (the bound's roof)
    pct_of_copy: float | None = None  # of the copy roof, whatever the bound
    pct_of_matmul: float | None = None  # of the matmul roof of the FLOPs' precision
    bus_gbps: float | None = None  # a collective's bus bandwidth (Workload.bus_bytes)
    pct_of_network: float | None = None  # of the measured NCCL all-reduce bus bandwidth
    link: str | None = None  # Workload.link: h2d, d2h, p2p_oneway, p2p_bidir
    link_gbps: float | None = None  # bytes over that link per second
    pct_of_link: float | None = None  # of the link's measured ceiling

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rates:
        return cls(**{f.name: data.get(f.name, f.default) for f in fields(cls)})


def workload_to_dict(w: Workload) -> dict[str, Any]:
    return {"bytes": w.bytes, "flops": w.flops, "flops_dtype": w.flops_dtype, "units": w.units,
            "unit_name": w.unit_name, "bus_bytes": w.bus_bytes, "link_bytes": w.link_bytes,
            "link": w.link, "bound": w.bound}


def workload_from_dict(data: dict[str, Any]) -> Workload:
    return Workload(**{k: data[k] for k in ("bytes", "flops", "flops_dtype", "units", "unit_name",
                                            "bus_bytes", "link_bytes", "link") if k in data})


def stats_from_dict(data: dict[str, Any]) -> SampleStats:
    keep = {f.name for f in fields(SampleStats)}
    values = {k: v for k, v in data.items() if k in keep}
    values["median_ci"] = tuple(values["median_ci"])
    return SampleStats(**values)


@dataclass
class BatchCheck:
    """What the escape check saw in one timed batch (GPU milliseconds vs host wall time)."""

    samples_ms: float  # the sum of the batch's samples
    harness_ms: float  # the harness's own work between samples (flush, fresh copies, capture)
    wall_ms: float  # synchronized host time of the whole batch
    calls: int


@dataclass
class SideResult:
    stats: SampleStats
    workload: Workload
    rates: Rates | None = None
    batches: list[BatchCheck] = field(default_factory=list)
    host_ms: float | None = None  # host time to enqueue one call (core.timing.host_probe)
    graph_calls: int = 0  # timed by CUDA-graph replay: run() calls per replayed graph (0: eager)
    rank_medians_ms: list[float] = field(default_factory=list)  # per rank, for multi-GPU pairs
    memory: Footprint | None = None  # device memory (pairs with a goal "memory" variant)
    gpu_busy_pct: float | None = None  # kernels running, % of the time (report_gpu_busy pairs)
    cold_starts: list[ColdStart] = field(default_factory=list)  # goal compile_time (fresh processes)
    setup_s: float | None = None  # its first setup() in the pair's own run (caches as found)
    goodput: list[GoodputStats] = field(default_factory=list)  # goal goodput: one per replay
    # goal simulated_cost: the modelled seconds of the work, one per input seed (same seeds
    # for every side, in the same order)
    simulated_costs: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return self.stats.median

    @property
    def host_bound(self) -> bool:
        """The host's time per call reaches the GPU time per call (HOST_BOUND of it), and the
        samples were eager calls (a graph replay's samples hold no host launch)."""
        return (not self.graph_calls and self.host_ms is not None
                and self.host_ms >= HOST_BOUND * self.stats.median)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stats": self.stats.to_dict(), "workload": workload_to_dict(self.workload),
                               "batches": [asdict(b) for b in self.batches], "host_ms": self.host_ms,
                               "graph_calls": self.graph_calls, "rank_medians_ms": self.rank_medians_ms}
        if self.memory is not None:
            out["memory"] = self.memory.to_dict()
        if self.gpu_busy_pct is not None:
            out["gpu_busy_pct"] = self.gpu_busy_pct
        if self.cold_starts:
            out["cold_starts"] = [s.to_dict() for s in self.cold_starts]
        if self.setup_s is not None:
            out["setup_s"] = self.setup_s
        if self.goodput:
            out["goodput"] = [s.to_dict() for s in self.goodput]
        if self.simulated_costs:
            out["simulated_costs"] = self.simulated_costs
        if self.rates is not None:
            out["rates"] = self.rates.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SideResult:
        return cls(stats_from_dict(data["stats"]), workload_from_dict(data.get("workload", {})),
                   Rates.from_dict(data["rates"]) if data.get("rates") else None,
                   [BatchCheck(**b) for b in data.get("batches", [])], data.get("host_ms"),
                   data.get("graph_calls", 0), data.get("rank_medians_ms", []),
                   Footprint.from_dict(data["memory"]) if data.get("memory") else None,
                   data.get("gpu_busy_pct"), [ColdStart(**s) for s in data.get("cold_starts", [])],
                   data.get("setup_s"), [GoodputStats(**s) for s in data.get("goodput", [])],
                   data.get("simulated_costs", []))


@dataclass
class Verification:
    """How a variant's outputs compared with the baseline's (worst over every check)."""

    ok: bool = True
    message: str = "match"
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    # worst |diff| / (atol + rtol·|baseline|) over the checks, ≤ 1 passes; None in results
    # written before it was recorded (2026-11-23)
    tolerance_used: float | None = None
    checks: int = 0  # comparisons made (verification seeds + timed-output checks)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verification:
        return cls(**{f.name: data.get(f.name, f.default) for f in fields(cls)})


@dataclass
class ExampleResult:
    """One optimized variant of a pair: `chNN:stem[_variant]`."""

    name: str
    id: str
    file: str
    status: Status = "ok"
    reason: str = ""
    chapter: str = ""
    stem: str = ""
    teaching: bool = False
    negative_result: str = ""  # the optimized side is slower here by design: why (not gated)
    goal: str = "speed"  # otherwise the gate judges memory_ratio, compile_ratio, goodput_ratio
    # or simulated_cost_ratio
    noisy: str = ""  # why the result is too noisy to trust (then it is never stored)
    cpu_bound: str = ""  # the host CPU work that sets the pair's time (Benchmark.cpu_bound)
    simulated: str = ""  # what the pair simulates instead of doing (Benchmark.simulated)
    verification: Verification | None = None
    timing: SideResult | None = None  # the optimized side
    baseline: SideResult | None = None  # the pair's baseline (shared by its variants)
    speedup: float | None = None
    speedup_ci: tuple[float, float] | None = None
    expectation: GateResult | None = None

    @property
    def measured(self) -> bool:
        return self.status == "ok" and self.timing is not None and self.speedup is not None

    @property
    def memory_ratio(self) -> float | None:
        """Baseline peak device memory over the optimized side's (2.0: half the memory)."""
        if self.baseline is None or self.timing is None:
            return None
        if self.baseline.memory is None or self.timing.memory is None:
            return None
        return self.baseline.memory.peak_bytes / max(1, self.timing.memory.peak_bytes)

    @property
    def compile_ratio(self) -> float | None:
        """Baseline cold start over the optimized side's (medians; 2.0: compiles in half)."""
        if self.baseline is None or self.timing is None:
            return None
        if not self.baseline.cold_starts or not self.timing.cold_starts:
            return None
        return median_s(self.baseline.cold_starts) / median_s(self.timing.cold_starts)

    @property
    def goodput_ratio(self) -> float | None:
        """Optimized goodput over the baseline's: the median of the per-round ratios
        (core.goodput.goodput_ratio; inf when the baseline met no request's SLO)."""
        if self.baseline is None or self.timing is None:
            return None
        if not self.baseline.goodput or not self.timing.goodput:
            return None
        return goodput_ratio(self.baseline.goodput, self.timing.goodput)

    @property
    def simulated_cost_ratios(self) -> list[float]:
        """Per input seed, the baseline's simulated seconds over the optimized side's."""
        if self.baseline is None or self.timing is None:
            return []
        return [b / o for b, o in zip(self.baseline.simulated_costs, self.timing.simulated_costs)
                if o > 0]

    @property
    def simulated_cost_ratio(self) -> float | None:
        """The median of the per-seed ratios (2.0: the modelled work takes half the time)."""
        ratios = self.simulated_cost_ratios
        return statistics.median(ratios) if ratios else None

    @property
    def host_bound(self) -> list[str]:
        """The sides whose samples measure the host's launches rather than the GPU."""
        return [name for name, side in (("baseline", self.baseline), ("optimized", self.timing))
                if side is not None and side.host_bound]

    @property
    def optimized_ms(self) -> float | None:
        return self.timing.median_ms if self.timing else None

    @property
    def baseline_ms(self) -> float | None:
        return self.baseline.median_ms if self.baseline else None

    def fail(self, reason: str, status: Status = "failed") -> None:
        self.status, self.reason = status, reason

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "id": self.id, "file": self.file,
                               "status": self.status, "reason": self.reason,
                               "chapter": self.chapter, "stem": self.stem, "teaching": self.teaching,
                               "negative_result": self.negative_result, "noisy": self.noisy,
                               "goal": self.goal, "cpu_bound": self.cpu_bound,
                               "simulated": self.simulated}
        if self.verification is not None:
            out["verification"] = self.verification.to_dict()
        if self.timing is not None:
            out["timing"] = self.timing.to_dict()
        if self.speedup is not None:
            out["speedup"] = self.speedup
            out["speedup_ci"] = list(self.speedup_ci or (self.speedup, self.speedup))
        if self.expectation is not None:
            out["expectation"] = self.expectation.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], baseline: SideResult | None = None) -> ExampleResult:
        gate = data.get("expectation")
        return cls(
            name=data["name"], id=data["id"], file=data.get("file", ""),
            status=data.get("status", "failed"), reason=data.get("reason", ""),
            chapter=data.get("chapter", ""), stem=data.get("stem", ""),
            teaching=bool(data.get("teaching", False)),
            negative_result=data.get("negative_result", ""), noisy=data.get("noisy", ""),
            goal=data.get("goal", "speed"), cpu_bound=data.get("cpu_bound", ""),
            simulated=data.get("simulated", ""),
            verification=Verification.from_dict(data["verification"]) if data.get("verification") else None,
            timing=SideResult.from_dict(data["timing"]) if data.get("timing") else None,
            baseline=baseline, speedup=data.get("speedup"),
            speedup_ci=tuple(data["speedup_ci"]) if data.get("speedup_ci") else None,
            expectation=GateResult(**gate) if gate else None)


@dataclass
class IntegrityReport:
    """Which checks ran on a pair, on which seeds, and what they cost in seconds."""

    verify_seeds: list[int] = field(default_factory=list)
    timed_seeds: list[int] = field(default_factory=list)  # one per refill of the inputs
    timed_output_checks: int = 0  # timed outputs compared with the baseline on the same values
    reference_checked: bool = False  # the baseline was checked against reference()
    launch_gap_ms: float = 0.0  # the host's own time between two samples, measured here
    # whether the escaped-work check ran (off in a smoke run side by side: PairSpec.shared_gpu)
    escape_check: bool = True
    verify_s: float = 0.0
    checks_s: float = 0.0  # refills and timed-output checks during timing
    timing_s: float = 0.0  # the timed batches themselves

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IntegrityReport:
        return cls(**{f.name: data.get(f.name, f.default) for f in fields(cls)})


@dataclass
class PairResult:
    """One pair as measured in its child process (plus the runner's annotations)."""

    pair: str
    status: Status = "ok"
    reason: str = ""
    device: str = ""
    teaching: bool = False
    timing_mode: str = "hot"
    ranks: int = 1  # GPUs the pair ran on (a process each unless one_process): its expectations key says `2x_h200`
    stop_reason: str = ""
    rounds: int = 0
    warmup_calls: dict[str, int] = field(default_factory=dict)
    baseline: SideResult | None = None
    examples: list[ExampleResult] = field(default_factory=list)
    integrity: IntegrityReport = field(default_factory=IntegrityReport)
    clocks_start: dict[str, Any] = field(default_factory=dict)
    clocks_end: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    profile: dict[str, Any] | None = None  # core.profiling's report, as written there

    def fail_all(self, reason: str, status: Status = "failed") -> PairResult:
        self.status, self.reason = status, reason
        for ex in self.examples:
            if ex.status == "ok":
                ex.fail(reason, status)
        return self

    def to_dict(self) -> dict[str, Any]:
        out = {"pair": self.pair, "status": self.status, "reason": self.reason,
               "device": self.device, "teaching": self.teaching, "timing_mode": self.timing_mode,
               "ranks": self.ranks,
               "stop_reason": self.stop_reason, "rounds": self.rounds,
               "warmup_calls": self.warmup_calls,
               "baseline": self.baseline.to_dict() if self.baseline else None,
               "examples": [ex.to_dict() for ex in self.examples],
               "integrity": self.integrity.to_dict(),
               "clocks_start": self.clocks_start, "clocks_end": self.clocks_end,
               "duration_s": self.duration_s}
        if self.profile is not None:
            out["profile"] = self.profile
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PairResult:
        baseline = SideResult.from_dict(data["baseline"]) if data.get("baseline") else None
        return cls(
            pair=data["pair"], status=data.get("status", "failed"), reason=data.get("reason", ""),
            device=data.get("device", ""), teaching=bool(data.get("teaching", False)),
            timing_mode=data.get("timing_mode", "hot"), ranks=data.get("ranks", 1),
            stop_reason=data.get("stop_reason", ""),
            rounds=data.get("rounds", 0), warmup_calls=data.get("warmup_calls", {}),
            baseline=baseline,
            examples=[ExampleResult.from_dict(e, baseline) for e in data.get("examples", [])],
            integrity=IntegrityReport.from_dict(data.get("integrity", {})),
            clocks_start=data.get("clocks_start", {}), clocks_end=data.get("clocks_end", {}),
            duration_s=data.get("duration_s", 0.0), profile=data.get("profile"))


@dataclass
class RunRecord:
    run_dir: Path
    fingerprint: dict[str, Any]
    ceilings: dict[str, float]
    pairs: list[PairResult] = field(default_factory=list)
    interrupted: bool = False
    builds: dict[str, Any] = field(default_factory=dict)
    precompile: dict[str, Any] = field(default_factory=dict)  # core.precompile's phase
    expectation_updates: list[str] = field(default_factory=list)
    expectation_skips: list[str] = field(default_factory=list)  # noisy results not stored
    options: dict[str, Any] = field(default_factory=dict)  # targets and options of the run
    wall_s: float = 0.0  # the whole run: probe and ceilings, builds, every pair

    @property
    def rows(self) -> list[ExampleResult]:
        return [ex for pair in self.pairs for ex in pair.examples]

    def exit_code(self, strict: bool = False, updating: bool = False) -> int:
        gate_bad = set() if updating else {"regression"} | ({"inconclusive"} if strict else set())
        for row in self.rows:
            if row.status == "failed" or (row.expectation and row.expectation.status in gate_bad):
                return 1
        return 130 if self.interrupted else 0

    def to_dict(self) -> dict[str, Any]:
        return {"run_dir": str(self.run_dir), "fingerprint": self.fingerprint,
                "ceilings": self.ceilings, "builds": self.builds, "precompile": self.precompile,
                "interrupted": self.interrupted,
                "expectation_updates": self.expectation_updates,
                "expectation_skips": self.expectation_skips, "options": self.options,
                "wall_s": self.wall_s, "pairs": [p.to_dict() for p in self.pairs]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        return cls(run_dir=Path(data.get("run_dir", ".")), fingerprint=data.get("fingerprint", {}),
                   ceilings=data.get("ceilings", {}),
                   pairs=[PairResult.from_dict(p) for p in data.get("pairs", [])],
                   interrupted=bool(data.get("interrupted", False)), builds=data.get("builds", {}),
                   precompile=data.get("precompile", {}),
                   expectation_updates=data.get("expectation_updates", []),
                   expectation_skips=data.get("expectation_skips", []),
                   options=data.get("options", {}), wall_s=data.get("wall_s", 0.0))
