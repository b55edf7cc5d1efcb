"""Timing: CUDA events enqueued back to back, adaptive sample counts, interleaved sides.

Method (measured on an H100, see design.md): synchronize the device once before and once
after a batch of samples, never between samples; enqueue each sample's start event, the
work and its end event back to back, and read all events after the final sync. A host
sync per sample would put the launch gap inside every sample (+5..20% on sub-ms kernels).

In `cold` mode an L2 flush (a write over a buffer twice the L2) is enqueued before each
start event, so every sample starts with a cold cache and the flush itself is not timed.

Baseline and optimized are measured in alternating rounds, so clock or thermal drift hits
both alike, until each side's median is known to ±1% (or a cap is reached).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from core.stats import summarize

Fn = Callable[[], Any]


@dataclass
class Batch:
    """One batch of samples of one side, plus the numbers the side-stream check needs."""

    samples_ms: list[float]
    span_ms: float  # GPU time from the first start event to the last end event
    wall_ms: float  # host time from before the first enqueue to after the final sync


@dataclass
class StopPolicy:
    min_samples: int = 10
    min_time_s: float = 0.2  # per side
    max_samples: int = 2000  # per side
    max_time_s: float = 4.0  # per side
    target_rel_ci: float = 0.01  # stop once the median is known to ±1%
    round_time_s: float = 0.025  # time per side per round
    fixed_samples: int | None = None  # --iterations: exactly this many, no adaptivity


@dataclass
class Measurement:
    samples_ms: dict[str, list[float]]
    batches: dict[str, list[Batch]]
    rounds: int
    stop_reason: str
    warmup_calls: dict[str, int] = field(default_factory=dict)


class L2Flusher:
    """Writes over a buffer twice the L2 size; allocated once, reused for every sample."""

    def __init__(self, device: str = "cuda"):
        import torch

        l2_bytes = torch.cuda.get_device_properties(device).L2_cache_size
        self.buffer = torch.empty(max(2 * l2_bytes, 1 << 20), dtype=torch.uint8, device=device)

    def __call__(self) -> None:
        self.buffer.fill_(1)


def measure_cuda(fn: Fn, n: int, flush: Fn | None = None) -> Batch:
    import torch

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    torch.cuda.synchronize()
    wall0 = time.perf_counter()
    for start, end in zip(starts, ends):
        if flush is not None:
            flush()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    wall_ms = (time.perf_counter() - wall0) * 1e3
    samples = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    return Batch(samples, starts[0].elapsed_time(ends[-1]), wall_ms)


def measure_cpu(fn: Fn, n: int, flush: Fn | None = None) -> Batch:
    samples = []
    wall0 = time.perf_counter()
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    wall_ms = (time.perf_counter() - wall0) * 1e3
    return Batch(samples, wall_ms, wall_ms)


def warm_up(fn: Fn, measure: Callable[[Fn, int], Batch], min_calls: int = 3,
            min_time_s: float = 0.05, max_calls: int = 200) -> tuple[float, int]:
    """Call `fn` until it has run `min_calls` times and for `min_time_s`; the first calls
    pay for lazy initialization (module load, autotuning, allocator growth).
    Returns the last call's time in ms (the estimate for batch sizing) and the call count."""
    calls, spent_ms, last = 0, 0.0, math.inf
    while calls < max_calls and (calls < min_calls or spent_ms < min_time_s * 1e3):
        batch = measure(fn, 1)
        last = batch.samples_ms[0]
        spent_ms += batch.wall_ms
        calls += 1
    return last, calls


def interleaved(sides: dict[str, Fn], policy: StopPolicy, device: str = "cuda",
                flush: Fn | None = None, warmup: int | None = None,
                between_rounds: Callable[[int], set[str]] | None = None) -> Measurement:
    """Measure every side in alternating rounds until `policy` says stop.

    `between_rounds(round)` runs after each round (the runner re-verifies outputs on fresh
    inputs there); the sides it returns are dropped from further timing.
    """
    sides = dict(sides)
    measure = measure_cuda if device.startswith("cuda") else measure_cpu
    warm, estimate_ms = {}, {}
    for name, fn in sides.items():
        if warmup is not None:
            for _ in range(warmup):
                fn()
            estimate_ms[name] = measure(fn, 1).samples_ms[0]
            warm[name] = warmup + 1
        else:
            estimate_ms[name], warm[name] = warm_up(fn, measure)

    per_round = {
        name: max(1, min(200, int(policy.round_time_s * 1e3 / max(est, 1e-4))))
        for name, est in estimate_ms.items()
    }
    if policy.fixed_samples is not None:
        per_round = {name: min(k, policy.fixed_samples) for name, k in per_round.items()}
    samples: dict[str, list[float]] = {name: [] for name in sides}
    batches: dict[str, list[Batch]] = {name: [] for name in sides}
    rounds = 0
    while True:
        rounds += 1
        for name, fn in sides.items():
            k = per_round[name]
            if policy.fixed_samples is not None:
                k = min(k, policy.fixed_samples - len(samples[name]))
                if k <= 0:
                    continue
            batch = measure(fn, k, flush)
            batches[name].append(batch)
            samples[name].extend(batch.samples_ms)
        if between_rounds is not None:
            for name in between_rounds(rounds):
                sides.pop(name, None)
                samples.pop(name, None)
        reason = _stop_reason(samples, policy) if samples else "every side was dropped"
        if reason:
            return Measurement(samples, batches, rounds, reason, warm)


def _stop_reason(samples: dict[str, list[float]], policy: StopPolicy) -> str | None:
    counts = [len(s) for s in samples.values()]
    if policy.fixed_samples is not None:
        return "fixed sample count" if min(counts) >= policy.fixed_samples else None
    times_s = [sum(s) / 1e3 for s in samples.values()]
    if max(counts) >= policy.max_samples:
        return f"sample cap ({policy.max_samples})"
    if max(times_s) >= policy.max_time_s:
        return f"time cap ({policy.max_time_s:g} s)"
    if min(counts) < policy.min_samples or min(times_s) < policy.min_time_s:
        return None
    worst = max(summarize(s).rel_ci_halfwidth for s in samples.values())
    if worst <= policy.target_rel_ci:
        return f"median known to ±{worst:.2%}"
    return None
