"""The typed run record: what a `bench run` measured, read by every writer.

    PairSpec            what the runner asks a pair's child to run (SPEC.json)
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

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from core.benchmark import Workload
from core.compile_time import ColdStart
from core.declarations import Declarations
from core.decided import Floor
from core.gate import FAILING, GateResult
from core.goodput import GoodputStats
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
    harness_host_ms: float = 0.0  # the host's time enqueueing the harness's work


@dataclass
class SideResult:
    stats: SampleStats
    workload: Workload
    rates: Rates | None = None
    batches: list[BatchCheck] = field(default_factory=list)
    host_ms: float | None = None  # least host time to enqueue one call (core.timing.host_probe)
    graph_calls: int = 0  # timed by CUDA-graph replay: run() calls per replayed graph (0: eager)
    rank_medians_ms: list[float] = field(default_factory=list)  # per rank, for multi-GPU pairs
    gpu_busy_pct: float | None = None  # kernels running, % of the time (report_gpu_busy pairs)
    setup_s: float | None = None  # its first setup() in the pair's own run (caches as found)
    left_ms: float | None = None  # the device still busy after a call's timed events (host_probe)
    sm_clock_mhz: float | None = None  # the SM clock after its batches, median (NVML)
    # What a goal other than speed measured of this side (core.goals), each kept in the JSON
    # under its field's name; `item` is the type a stored value is read back into.
    memory: Footprint | None = field(default=None, metadata={"item": Footprint})  # peak memory
    cold_starts: list[ColdStart] = field(default_factory=list, metadata={"item": ColdStart})
    goodput: list[GoodputStats] = field(default_factory=list, metadata={"item": GoodputStats})
    # the modelled seconds of the work, one per input seed (same seeds for every side)
    simulated_costs: list[float] = field(default_factory=list, metadata={"item": float})

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
        for name in ("gpu_busy_pct", "setup_s", "left_ms", "sm_clock_mhz"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        for f in _goal_fields():
            value = getattr(self, f.name)
            if value:
                out[f.name] = ([_plain(v) for v in value] if isinstance(value, list) else _plain(value))
        if self.rates is not None:
            out["rates"] = self.rates.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SideResult:
        goal_data = {}
        for f in _goal_fields():
            if data.get(f.name):
                item, value = f.metadata["item"], data[f.name]
                goal_data[f.name] = ([_typed(item, v) for v in value] if isinstance(value, list)
                                     else _typed(item, value))
        return cls(stats_from_dict(data["stats"]), workload_from_dict(data.get("workload", {})),
                   Rates.from_dict(data["rates"]) if data.get("rates") else None,
                   [BatchCheck(**b) for b in data.get("batches", [])], data.get("host_ms"),
                   data.get("graph_calls", 0), data.get("rank_medians_ms", []),
                   data.get("gpu_busy_pct"), data.get("setup_s"), data.get("left_ms"),
                   data.get("sm_clock_mhz"), **goal_data)


def _goal_fields() -> list[Any]:
    return [f for f in fields(SideResult) if "item" in f.metadata]


def _plain(value: Any) -> Any:
    return value.to_dict() if hasattr(value, "to_dict") else value


def _typed(item: type, value: Any) -> Any:
    if hasattr(item, "from_dict"):
        return item.from_dict(value)
    return item(**value) if isinstance(value, dict) else item(value)


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
    # the worst relative RMS error (‖optimized − baseline‖ / ‖baseline‖) over the checks:
    # what a declared precision change costs (core.verify)
    rel_rms_err: float = 0.0
    rms_used: float = 0.0  # the worst rel_rms_err as a share of its limit (declared tolerances)

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
    goal: str = "speed"  # what the gate judges (core.goals)
    noisy: str = ""  # why the result is too noisy to trust (then it is never stored)
    cpu_bound: str = ""  # the host CPU work that sets the pair's time (Benchmark.cpu_bound)
    simulated: str = ""  # what the pair simulates instead of doing (Benchmark.simulated)
    other_host: str = ""  # a host-paced result stored on another host: which, and this one
    verification: Verification | None = None
    timing: SideResult | None = None  # the optimized side
    baseline: SideResult | None = None  # the pair's baseline (shared by its variants)
    speedup: float | None = None
    speedup_ci: tuple[float, float] | None = None
    expectation: GateResult | None = None
    # everything it declared that changes how it is judged, resolved with its baseline's
    # (the child reads them; the gate compares them with the stored ones)
    declarations: Declarations = field(default_factory=Declarations)

    @property
    def measured(self) -> bool:
        return self.status == "ok" and self.timing is not None and self.speedup is not None

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
                               "simulated": self.simulated, "other_host": self.other_host,
                               "declarations": self.declarations.to_dict()}
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
            simulated=data.get("simulated", ""), other_host=data.get("other_host", ""),
            verification=Verification.from_dict(data["verification"]) if data.get("verification") else None,
            timing=SideResult.from_dict(data["timing"]) if data.get("timing") else None,
            baseline=baseline, speedup=data.get("speedup"),
            speedup_ci=tuple(data["speedup_ci"]) if data.get("speedup_ci") else None,
            expectation=GateResult(**gate) if gate else None,
            declarations=Declarations.from_dict(data.get("declarations") or {}))


@dataclass
class IntegrityReport:
    """Which checks ran on a pair, on which seeds, and what they cost in seconds."""

    verify_seeds: list[int] = field(default_factory=list)
    timed_seeds: list[int] = field(default_factory=list)  # the seeds of the checked timed calls
    fresh_sets: int = 0  # input sets drawn for timed calls: one per call (core.fresh)
    fresh_s: float = 0.0  # drawing them, and the state checks' setup() before a batch
    timed_output_checks: int = 0  # timed outputs compared with the baseline on the same values
    reference_checked: bool = False  # the baseline was checked against reference()
    launch_gap_ms: float = 0.0  # the host's own time between two samples, measured here
    # whether the escaped-work check ran (off in a smoke run side by side: PairSpec.shared_gpu)
    escape_check: bool = True
    verify_s: float = 0.0
    checks_s: float = 0.0  # timed-output checks and input checks during timing
    # setup() re-run for state checks: before a stateful side's checked batch (in fresh_s)
    # and the baseline's before it is stepped to the kept call (in checks_s)
    state_setup_s: float = 0.0
    timing_s: float = 0.0  # the timed batches and the timing loop (not fresh_s or checks_s)

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
    slow_because: str = ""  # the baseline's declaration (core.benchmark): why it may run long

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
        if self.slow_because:
            out["slow_because"] = self.slow_because
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
            duration_s=data.get("duration_s", 0.0), profile=data.get("profile"),
            slow_because=data.get("slow_because", ""))


@dataclass(frozen=True)
class VariantSpec:
    """One optimized variant of a pair spec: `name` (stem[_variant]), `id` (chNN:name), file."""

    name: str
    id: str
    path: str


@dataclass
class PairSpec:
    """What the runner asks a pair's child to run (SPEC.json); runner, precheck, the CLI's
    tool commands and the tests all build this one type."""

    pair: str
    baseline: str  # path of baseline_<stem>.py
    examples: list[VariantSpec]
    seed: int = 0  # the weight seed (setup); input seeds are drawn at random
    iterations: int | None = None
    warmup: int | None = None
    mode: str = "full"  # full | smoke (RunOptions.mode)
    # a gate run: each variant's floor, from its stored entry, computed by the runner with its
    # goal's rules (core.goals), so timing, replays or cold starts may stop once every
    # verdict is known (core.decided); empty otherwise, and then nothing stops early
    floors: dict[str, Floor] = field(default_factory=dict)
    # a smoke run side by side (core.side_by_side): other pairs' kernels share the GPU, and the
    # escaped-work check (a batch's wall time against its samples) cannot tell their time from
    # work that escaped the timed stream, so it is off; no time a smoke run reports is a result
    shared_gpu: bool = False
    gpus: int | None = None  # bench run --gpus N: scaling pairs run as N ranks, none uses more

    def __post_init__(self) -> None:
        self.examples = [e if isinstance(e, VariantSpec) else VariantSpec(**e) for e in self.examples]
        self.floors = {n: f if isinstance(f, Floor) else Floor(**f) for n, f in self.floors.items()}

    def files(self) -> list[Path]:
        """The pair's files: the baseline first, then each variant's."""
        return [Path(self.baseline), *(Path(e.path) for e in self.examples)]

    def path_of(self, side: str) -> str:
        """The file of `side` ("baseline" or a variant's name)."""
        return self.baseline if side == "baseline" else next(e.path for e in self.examples
                                                             if e.name == side)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PairSpec:
        return cls(**data)

    @classmethod
    def read(cls, path: str | Path) -> PairSpec:
        import json

        return cls.from_dict(json.loads(Path(path).read_text()))


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
        gate_bad = set() if updating else set(FAILING) | ({"inconclusive"} if strict else set())
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
