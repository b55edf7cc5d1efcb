"""Device memory a side needs, for pairs whose optimized side declares `goal = "memory"`.

A side's footprint is what it holds plus the most one call adds on top:

    resident  bytes its setup() left allocated (weights, workspaces, buffers), plus what the
              first two calls allocated and kept (optimizer state, lazily built buffers)
    call      the peak the third run() reaches above what was allocated when it started
              (activations kept for backward, temporaries, the output): a steady step's
    peak      resident + call: what this side needs on the GPU at once

Sides are set up one after another in one process, so each side's resident bytes are the
growth of `torch.cuda.memory_allocated()` across its own setup() (and first call); the other
sides' allocations are outside the difference. Moving an allocation from run() into setup()
therefore saves nothing: it is counted in `resident` instead of `call`. The inputs the
harness builds are shared by every side and counted in none. Multi-GPU pairs report the
largest peak of any rank (the GPU that fills first decides whether the step fits).

Why the third call: a side's first steps may do one-off work a training run does once, not
every step. DDP rebuilds its gradient buckets in the second step, allocating the new ones
before it frees the old: on 4xH200, ch13 fsdp's DDP side reached 5.2 GiB above its start in
step 2 and 1.2 GiB in every step after (and in step 2 too, when another model had stepped in
that process first), so a footprint read at step 2 moved the stored saving from 2.30x to
2.73x with the order of the pairs.

Library workspaces that the first matmul of a process allocates and keeps (cuBLAS's, tens
of MiB on Hopper) belong to no side: prime_libraries() creates them before the first setup().

Counting uses the caching allocator's allocated bytes (tensors alive), not its reserved
pool, so the numbers do not depend on what earlier sides left cached.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Protocol


@dataclass(frozen=True)
class Footprint:
    resident_bytes: int
    call_bytes: int

    @property
    def peak_bytes(self) -> int:
        return self.resident_bytes + self.call_bytes

    def to_dict(self) -> dict[str, int]:
        return {**asdict(self), "peak_bytes": self.peak_bytes}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Footprint:
        return cls(int(data["resident_bytes"]), int(data["call_bytes"]))


class Meter(Protocol):
    """The allocator counters a footprint is read from (torch.cuda's, or a test's fake)."""

    def allocated(self) -> int: ...
    def reset_peak(self) -> None: ...
    def peak(self) -> int: ...
    def sync(self) -> None: ...


class CudaMeter:
    """torch.cuda's caching-allocator counters for the current device."""

    def __init__(self) -> None:
        import torch

        self._torch = torch

    def allocated(self) -> int:
        return self._torch.cuda.memory_allocated()

    def reset_peak(self) -> None:
        self._torch.cuda.reset_peak_memory_stats()

    def peak(self) -> int:
        return self._torch.cuda.max_memory_allocated()

    def sync(self) -> None:
        self._torch.cuda.synchronize()


WARM_CALLS = 2  # steps before the measured one: lazy state (step 1), DDP's bucket rebuild (step 2)
CALLS = WARM_CALLS + 1


def footprint(call: Callable[[int], Any], setup_bytes: int, meter: Meter,
              keep: Callable[[Any], None] = lambda out: None) -> Footprint:
    """call(i) for i in 0..CALLS-1: what the first WARM_CALLS allocated and kept joins
    `setup_bytes` (what the side's setup left allocated) as resident; the last call's peak
    above its start is the call's, and its output goes to `keep` (the caller checks it: a
    call that skipped its work would allocate nothing)."""
    meter.sync()
    before = meter.allocated()
    for i in range(WARM_CALLS):
        out = call(i)
        meter.sync()
        del out
    kept = meter.allocated() - before  # lazily created state the side keeps between calls
    start = meter.allocated()
    meter.reset_peak()
    out = call(WARM_CALLS)
    meter.sync()
    peak = meter.peak() - start
    keep(out)
    del out
    return Footprint(max(0, setup_bytes + kept), max(0, peak))


def prime_libraries() -> None:
    """One small matmul per common precision on the current stream, so the library
    workspaces they allocate exist before any side is counted."""
    import torch

    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        a = torch.ones(64, 64, device="cuda", dtype=dtype)
        (a @ a).sum().item()


def largest(per_rank: list[Footprint]) -> Footprint:
    """The footprint of the rank with the largest peak."""
    return max(per_rank, key=lambda f: f.peak_bytes)


def mib(value: float) -> str:
    return f"{value / 2**20:,.0f} MiB" if value < 10 * 2**30 else f"{value / 2**30:.1f} GiB"
