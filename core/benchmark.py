"""The benchmark contract (version 2): the harness owns each call's inputs.

A pair is `baseline_<stem>.py` plus one or more `optimized_<stem>[_<variant>].py` in a
chapter folder. Each file defines `get_benchmark()` returning a `Benchmark` with:

    setup(ctx)        weights, compiled kernels, workspaces, output buffers, graph capture;
                      anything that does not depend on the data one call consumes (not timed)
    make_inputs(seed) the per-call data (activations, a batch), built from `seed`; a stem's
                      sides share one builder (the baseline's is the one the harness calls)
    run(inputs)       the measured work on those inputs, once; returns tensor(s) to verify
    workload()        bytes / FLOPs / user units of one run()

and optionally `reference(inputs)` (a trusted answer, checked against the baseline with
`reference_tolerance`, else `tolerance`), `tolerance`, `requires`, `supports_cpu`,
`timing_mode` ("hot"; "cold": L2 flushed before each sample; "graph": CUDA-graph replay, for
kernels shorter than the host's launch), `goal` (what the gate judges, one of
core.goals.NAMES), `teaching`, `negative_result`,
`stateful`, `inplace`, `precision`, `seed_sensitive`, `rank0_output`, `cpu_bound`,
`unavailable()` (why this machine cannot show the technique although `requires` is met,
e.g. GPUDirect Storage in kvikio's compatibility mode: a SKIP with that reason) and
`teardown()`. The harness sets `self.ctx` before it calls setup().

The pair owns the rules that judge it (contract v3): the input builder, `workload()`,
`reference()`, a goodput pair's `trace()` and `slo`, and a simulated pair's
cost model are the baseline's, shared by every variant (core.rules). What a
variant declares about itself (goal, tolerance, negative_result, ...) is stored with its
expectation, and a run that declares otherwise fails the gate (core.declarations).

Because the harness builds the inputs, it can refill them with fresh values between timed
batches and check timed outputs against the baseline on the same values (core.child); an
answer prepared in setup() or cached across calls fails there. Seeds are drawn by the
harness at random and recorded in the result, so a failure can be replayed.

A baseline file may set a module constant `TIMEOUT_S = <seconds>` to override the default
per-pair timeout (for pairs known to need long).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal

if TYPE_CHECKING:  # torch is imported where it is used: the parent process stays light
    import torch

TimingMode = Literal["hot", "cold", "graph"]
LINKS = ("h2d", "d2h", "p2p_oneway", "p2p_bidir")  # Workload.link
Inputs = Any
"""A tensor, or a tuple/list/dict (nested) of tensors and plain constants."""


@dataclass(frozen=True)
class Workload:
    """What one `run()` does; the harness turns it into rates and % of the ceiling.

    bytes: the fewest bytes the work must move through device memory (reads + writes).
    flops: floating-point operations (a multiply-add counts 2).
    flops_dtype: the precision the FLOPs run at ("fp32", "tf32", "bf16", "fp16", "fp8"),
        which picks the matmul ceiling they are compared against.
    units / unit_name: a user-facing count, e.g. 4096 "tokens", reported per second.
    bus_bytes: for a collective, the bytes per rank in NCCL's bus-bandwidth convention
        (all-reduce of S bytes over n ranks: 2(n-1)/n·S); judged against the measured NCCL
        all-reduce ceiling (`hw peak --gpus N`).
    link_bytes / link: bytes one run() moves over a link other than HBM, and which link:
        "h2d" / "d2h" (host to device / device to host, judged against the measured pinned
        copy ceiling), "p2p_oneway" / "p2p_bidir" (GPU to GPU, `hw peak --gpus 2`).
    """

    bytes: float = 0.0
    flops: float = 0.0
    flops_dtype: str = "fp32"
    units: float = 0.0
    unit_name: str = ""
    bus_bytes: float = 0.0
    link_bytes: float = 0.0
    link: str = ""

    def __post_init__(self) -> None:
        if self.link_bytes and self.link not in LINKS:
            raise ValueError(f"Workload(link={self.link!r}): link_bytes needs link set to one of "
                             f"{', '.join(LINKS)}")

    @property
    def bound(self) -> str:
        """A rule of thumb for 'memory', 'compute', 'network' or 'units', used where a run
        measured no ceilings (CPU); on a GPU core.metrics.bound() uses the measured ridge."""
        if self.bus_bytes and not (self.flops or self.bytes):
            return "network"
        if self.link_bytes and not (self.flops or self.bytes):
            return "link"
        if self.flops and self.bytes:
            # Ridge point of a Hopper GPU is a few hundred FLOP/byte even in fp32 CUDA-core
            # math (~20); anything below ~10 FLOP/byte cannot be compute-bound.
            return "compute" if self.flops / self.bytes > 10 else "memory"
        if self.flops:
            return "compute"
        if self.bytes:
            return "memory"
        return "units"


class PairError(RuntimeError):
    """A problem with a pair file or a whole pair; the message names the file and what to do."""


class SideError(RuntimeError):
    """One side broke a rule or raised; the message names what happened."""


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
    numa_nodes: int = 1  # NUMA nodes the host must have (/sys/devices/system/node/node*)
    # gpus > 1 runs the pair as that many ranks (one process per GPU) unless one_process:
    # then a single process drives cuda:0 .. cuda:gpus-1 itself (a serving pair whose
    # goodput the harness replays in one process, e.g. prefill on one GPU, decode on another).
    one_process: bool = False
    # gpus > 1 and one_node: every rank on one machine. Torch symmetric memory maps the peers'
    # buffers over NVLink, which only one node's GPUs share; over the nodes of
    # AISP_TORCHRUN_ARGS the side is a clean SKIP instead of a failed rendezvous.
    one_node: bool = False
    # gpus > 1 and scales: `gpus` is the least; the technique scales with the GPU count
    # (collectives, DDP, FSDP, tensor/pipeline/context/expert parallelism), so the pair runs
    # as one rank per GPU present (`bench run --gpus N`: N ranks) and is stored by the count
    # (`4x_h100`). Without it the pair is about exactly `gpus` GPUs (a P2P copy). The value
    # says how its work grows with the GPUs, which sets what scaling efficiency means in the
    # chapter README's scaling table (core.scaling): "weak", the work per GPU is fixed (ideal:
    # the same time per step at every count), or "strong", the whole problem is fixed (ideal:
    # time × GPUs constant).
    scales: str = ""

    def __post_init__(self) -> None:
        if self.scales not in ("", "weak", "strong"):
            raise ValueError(f"Requirements(scales={self.scales!r}): say how the work grows with "
                             f"the GPU count, scales=\"weak\" (fixed work per GPU) or "
                             f"scales=\"strong\" (a fixed problem split over the GPUs)")


@dataclass
class BenchContext:
    """Handed to `setup()`. `device` is a torch device string ("cuda" or "cpu").

    `seed` draws the weights (every side of a pair gets the same one, so equal weights)."""

    seed: int = 0
    device: str = "cuda"
    extra: dict[str, Any] = field(default_factory=dict)
    mode: str = "full"  # "smoke" (`bench run --mode smoke`): a pair may pick smaller shapes

    @property
    def is_cuda(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def smoke(self) -> bool:
        """A smoke run checks that the pair runs and verifies, quickly; nothing it measures
        is gated or stored, so a pair may shrink its shapes here (keep them GPU-realistic
        enough to take the same code paths)."""
        return self.mode == "smoke"


class Benchmark:
    """The contract's defaults plus the helpers pair files would otherwise retype."""

    tolerance: Tolerance | None = None  # None: default by output dtype (core.verify)
    reference_tolerance: Tolerance | None = None  # baseline vs reference(); None: `tolerance`
    requires: Requirements = Requirements()
    supports_cpu: bool = False
    timing_mode: TimingMode = "hot"
    teaching: bool = False  # the book's deliberately naive example; kept out of headlines
    negative_result: str = ""  # on an optimized side slower here by design: why (not gated)
    # hardware the technique needs that the lent machines lack, e.g. "Blackwell (compute
    # capability 10.0)": until it is measured the front page lists the variant as a SKIP row
    # with this (read from the source, core.front_page); its requirements decide the SKIP itself
    only_on: str = ""
    seed_sensitive: bool = True  # outputs must change with the input seed
    stateful: bool = False  # run() advances state (a training step): verified from fresh setups
    # What the optimized side buys, and so what the gate judges: the speedup by default, or
    # the memory saved, the cold start, the goodput at an SLO or a simulated cost (core.goals
    # holds one module per goal and says what each needs); the time is reported beside.
    goal: str = "speed"
    # A variant whose numbers are narrower than the baseline's says how ("bf16 operands, fp32
    # accumulate"): the table shows it, and it may then count its own workload() (its bytes
    # and FLOPs, never more than the baseline's; core.rules.workload_problem).
    precision: str = ""
    # Multi-GPU pairs: the answer is on rank 0 alone (a single-process baseline such as
    # nn.DataParallel drives every GPU from rank 0, and its run() returns None on the others).
    # Only rank 0's outputs are verified; the other ranks still run every call in step.
    rank0_output: bool = False
    # A pair about keeping the GPU fed (data loading): after timing, report each side's GPU
    # busy share, NVML's kernel-running time while the side runs back to back (core.busy).
    report_gpu_busy: bool = False
    # Seconds per side the adaptive timing may spend before it stops at its time cap (default
    # core.timing.StopPolicy.max_time_s, 4 s). Host-bound steps with a spread of their own
    # (data loaders, thread pools) need longer to pin their median down to ±1%.
    time_cap_s: float | None = None
    # A pair whose time is host CPU work (decoding, tokenizing, Python scheduling), not the
    # GPU's: say which work. Its speedup depends on the host's CPU and on what else runs there
    # (a cloud VM's cores vary ±15% call to call), not only on the GPU model the expectation
    # is keyed by, so it is gated with core.gate.CPU_BOUND_TOLERANCE instead of the
    # default, and the table marks it `cpu-bound`. The host's CPU model and cores are in the
    # stored entry's provenance.
    cpu_bound: str = ""
    # A pair whose run (verification, checks and timing of every side) takes longer than
    # core.report.PAIR_BUDGET_S on the GPU it is stored for: say why it cannot be
    # smaller and still show its lesson (cold compiles, goodput replays in real time). Each
    # stored entry records its pair's seconds (`pair_s`); a run notes an undeclared one as
    # SLOW, and a test fails on a committed entry over the budget without this declaration.
    slow_because: str = ""
    # A pair that simulates (a fleet of replicas, a placement over links) on costs measured
    # on the device, instead of doing the work: say what it simulates and from what. The
    # report tags it `simulated` and says so beside its numbers. With the goodput goal it
    # defines simulated_replay(seed) -> list[core.goodput.RequestTiming] (virtual time; a
    # request it turns away has no tokens and counts as a miss) in place of trace/engine.
    simulated: str = ""
    inplace: bool = False  # run() writes its result into its inputs: each call gets a fresh copy
    description: str = ""
    ctx: BenchContext = BenchContext()  # set by the harness before setup()

    # --- the contract ---------------------------------------------------------------------
    def setup(self, ctx: BenchContext) -> None:
        """Weights, kernels, workspaces; nothing the answer of one call depends on."""

    def make_inputs(self, seed: int) -> Inputs:
        raise NotImplementedError(f"{type(self).__name__} defines no make_inputs(seed)")

    def run(self, inputs: Inputs) -> Any:
        raise NotImplementedError(f"{type(self).__name__} defines no run(inputs)")

    def workload(self) -> Workload:
        return Workload()

    def reference(self, inputs: Inputs) -> Any:
        """A trusted answer for `inputs` (float64 or a library call), or None for none."""
        return None

    def teardown(self) -> None:
        pass

    # --- helpers --------------------------------------------------------------------------
    @property
    def device(self) -> str:
        return self.ctx.device

    def generator(self, seed: int) -> torch.Generator:
        """A generator on this benchmark's device, seeded (for make_inputs and weights)."""
        import torch

        return torch.Generator(device=self.device).manual_seed(seed)

    def randn(self, *shape: int, gen: torch.Generator, dtype: torch.dtype | None = None
              ) -> torch.Tensor:
        """Standard-normal values on this benchmark's device, drawn from `gen`."""
        import torch

        x = torch.randn(*shape, generator=gen, device=self.device)
        return x if dtype is None else x.to(dtype)

    @staticmethod
    def nan_like(tensor: torch.Tensor) -> torch.Tensor:
        """An output buffer whose unwritten elements fail verification (NaN is never 'close')."""
        import torch

        return torch.full_like(tensor, float("nan"))

    def sm_count(self) -> int:
        import torch

        return torch.cuda.get_device_properties(self.device).multi_processor_count


def option(bench: object, name: str, default: Any) -> Any:
    """Read an optional contract attribute from any benchmark object."""
    return getattr(bench, name, default)


CONTRACT = ("setup", "make_inputs", "run", "workload")


def validate(bench: object, origin: str) -> None:
    """Raise TypeError naming `origin` when `bench` does not follow the contract."""
    if not isinstance(bench, Benchmark):
        raise TypeError(
            f"{origin}: get_benchmark() returned {type(bench).__name__}; return a subclass of "
            f"core.benchmark.Benchmark with setup(ctx), make_inputs(seed), run(inputs) and "
            f"workload() (contract version 2, see README 'Adding a pair')")
    cls = type(bench)
    missing = [m for m in ("make_inputs", "run") if getattr(cls, m) is getattr(Benchmark, m)]
    if missing:
        raise TypeError(f"{origin}: {cls.__name__} does not define {' or '.join(missing)}; "
                        f"a benchmark builds its per-call data in make_inputs(seed) and does "
                        f"the measured work in run(inputs)")
    mode = option(bench, "timing_mode", "hot")
    if mode not in ("hot", "cold", "graph"):
        raise TypeError(f"{origin}: timing_mode must be 'hot', 'cold' or 'graph', got {mode!r}")
    if mode == "graph" and (option(bench, "inplace", False) or option(bench, "stateful", False)):
        raise TypeError(f"{origin}: timing_mode = 'graph' replays run() several times per sample "
                        f"on the same inputs, which an `inplace` or `stateful` run() cannot "
                        f"do; time it with 'hot'")


def shares_builder(baseline: Benchmark, variant: Benchmark) -> bool:
    """True when both sides build inputs with the same make_inputs (one builder per stem)."""
    return type(baseline).make_inputs is type(variant).make_inputs


GetBenchmark = Callable[[], Benchmark]
