"""The benchmark contract: what a pair file's `get_benchmark()` must return.

A pair is `baseline_<stem>.py` plus one or more `optimized_<stem>[_<variant>].py` in a
chapter folder. Each file defines `get_benchmark()` returning an object with:

    setup(ctx)  -> None     allocate inputs from ctx.seed on ctx.device (not timed)
    run()       -> output   the measured work, once; returns tensor(s) to verify
    workload()  -> Workload bytes / FLOPs / user units of one run()

and optionally `tolerance`, `requires`, `supports_cpu`, `timing_mode`, `teaching`,
`seed_sensitive`, `mutates_inputs` and `teardown()`. `setup()` may be called several times
on one object (the harness re-verifies on fresh seeds); each call replaces the inputs.

A baseline file may set a module constant `TIMEOUT_S = <seconds>` to override the default
per-pair timeout (for pairs known to need long). `Benchmark` below provides defaults for all of them;
subclassing it is the easy way, but any object with the same attributes works.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Protocol, runtime_checkable

TimingMode = Literal["hot", "cold"]


@dataclass(frozen=True)
class Workload:
    """What one `run()` does; the harness turns it into rates and % of the ceiling.

    bytes: the fewest bytes the work must move through device memory (reads + writes).
    flops: floating-point operations (a multiply-add counts 2).
    flops_dtype: the precision the FLOPs run at ("fp32", "tf32", "bf16", "fp16", "fp8"),
        which picks the matmul ceiling they are compared against.
    units / unit_name: a user-facing count, e.g. 4096 "tokens", reported per second.
    """

    bytes: float = 0.0
    flops: float = 0.0
    flops_dtype: str = "fp32"
    units: float = 0.0
    unit_name: str = ""

    @property
    def bound(self) -> str:
        """Which resource the pair is judged against: 'memory', 'compute' or 'units'."""
        if self.flops and self.bytes:
            # Ridge point of a Hopper GPU is a few hundred FLOP/byte even in fp32 CUDA-core
            # math (~20); anything below ~10 FLOP/byte cannot be compute-bound.
            return "compute" if self.flops / self.bytes > 10 else "memory"
        if self.flops:
            return "compute"
        if self.bytes:
            return "memory"
        return "units"


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


@dataclass(frozen=True)
class Requirements:
    """What a benchmark needs; a missing need is a clean SKIP with the reason."""

    cuda: bool = True
    min_compute_capability: tuple[int, int] | None = None
    gpus: int = 1
    modules: tuple[str, ...] = ()  # importable Python modules, e.g. ("triton",)
    nvcc: bool = False  # needs the CUDA compiler to build its .cu file


@dataclass
class BenchContext:
    """Handed to `setup()`. `device` is a torch device string ("cuda" or "cpu")."""

    seed: int = 0
    device: str = "cuda"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_cuda(self) -> bool:
        return self.device.startswith("cuda")


@runtime_checkable
class BenchmarkProtocol(Protocol):
    def setup(self, ctx: BenchContext) -> None: ...
    def run(self) -> Any: ...
    def workload(self) -> Workload: ...


class Benchmark:
    """Convenience base class with the contract's defaults."""

    tolerance: Tolerance | None = None  # None: default by output dtype (core.verify)
    requires: Requirements = Requirements()
    supports_cpu: bool = False
    timing_mode: TimingMode = "hot"
    teaching: bool = False  # the book's deliberately naive example; kept out of headlines
    seed_sensitive: bool = True  # outputs must change with the input seed
    mutates_inputs: bool = False  # run() may change its tensor attributes (e.g. a train step)
    description: str = ""

    def setup(self, ctx: BenchContext) -> None:
        raise NotImplementedError

    def run(self) -> Any:
        raise NotImplementedError

    def workload(self) -> Workload:
        return Workload()

    def teardown(self) -> None:
        pass


def option(bench: object, name: str, default: Any) -> Any:
    """Read an optional contract attribute from any benchmark object."""
    return getattr(bench, name, default)


def validate(bench: object, origin: str) -> None:
    """Raise TypeError naming `origin` when `bench` does not follow the contract."""
    missing = [m for m in ("setup", "run", "workload") if not callable(getattr(bench, m, None))]
    if missing:
        raise TypeError(
            f"{origin}: get_benchmark() returned {type(bench).__name__}, which lacks "
            f"{', '.join(missing)}(); return an object with setup(ctx), run() and workload() "
            f"(subclass core.benchmark.Benchmark)"
        )
    mode = option(bench, "timing_mode", "hot")
    if mode not in ("hot", "cold"):
        raise TypeError(f"{origin}: timing_mode must be 'hot' or 'cold', got {mode!r}")


GetBenchmark = Callable[[], object]
