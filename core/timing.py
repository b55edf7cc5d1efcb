"""Timing: CUDA events enqueued back to back, adaptive sample counts, interleaved sides.

Method (measured on an H100; README, 'How the harness measures'): synchronize the device once before and once
after a batch of samples, never between samples; enqueue each sample's start event, the
work and its end event back to back, and read all events after the final sync. A host
sync per sample would put the launch gap inside every sample (+5..20% on sub-ms kernels).

The harness's own work between samples (an L2 flush in `cold` mode, the copy of fresh input
values into the inputs, the copy of one sample's output for the timed-output check) is
enqueued outside the start/end events and timed by its own events, so the escape check
(core.integrity) can account for every millisecond of the batch's wall time.

Which sample's output is kept for the check is decided after each call returns, by a draw the
pair cannot read beforehand (`Keep.draw`: the kernel's entropy in one process): reservoir
sampling keeps call i with probability 1/(calls so far), so the kept call is uniform over the
batch and no call knows, while it runs, whether it will be checked.

A pair that declares `timing_mode = "graph"` is timed by CUDA-graph replay: run() is
captured K times in one graph and each sample is one replay, divided by K. That is the GPU's
time per call without the host's launch cost, for pairs whose kernels are shorter than
the host's launch (a 3.6 µs kernel measured as 26 µs per eager call; README,
'Expectations', on host-bound sides). K is chosen so one replay lasts ~0.5 ms.

Baseline and optimized are measured in alternating rounds, so clock or thermal drift hits
both alike, until each side's median is known to ±1% (or a cap is reached). The harness's
checks between rounds (the baseline's answers for the kept outputs, the timed-output
check) can cost more than the round they guard: a pair whose inputs are drawn on the host
measured 0.3 s of checks per 20 ms round on an H200, 58 s of its 77 s. While the checks
cost more than the timed batches, rounds grow longer (more samples per round): every round
still gets fresh values and its check, there are just fewer of them, and never so few that
the time cap would leave fewer than MIN_ROUNDS rounds for the round bootstrap (core.stats);
a median known to ±1% stops lengthened rounds only once there are MIN_ROUNDS of them.

The timing functions are bound here, when the harness is imported and before any pair
module is: a pair that replaces `time.perf_counter` or `torch.cuda.Event.elapsed_time`
does not change what is measured, and core.integrity.Guard reports the replacement.
"""
from __future__ import annotations

import math
import secrets
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Protocol

import torch

from core.stats import MIN_ROUNDS, summarize

# Bound before any pair module is imported (core.child imports this module first).
_perf_counter = time.perf_counter
_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_elapsed = torch.cuda.Event.elapsed_time
_synchronize = torch.cuda.synchronize
_CUDAGraph = torch.cuda.CUDAGraph
_replay = torch.cuda.CUDAGraph.replay

Fn = Callable[[], Any]


class Agreement(Protocol):
    """How the ranks of a multi-GPU pair agree (core.ranks.Ranks)."""

    def from_rank0(self, value: Any) -> Any: ...
    def any(self, flag: bool) -> bool: ...
    def union(self, items: set[str]) -> set[str]: ...


@dataclass
class Batch:
    """One batch of samples of one side, plus what the escape check needs."""

    samples_ms: list[float]
    wall_ms: float  # host time from before the first enqueue to after the final sync
    harness_ms: float = 0.0  # the harness's own work between samples (GPU time on CUDA)
    captured_at: int | None = None  # which sample's output was captured
    harness_host_ms: float = 0.0  # the host's time enqueueing that work (CUDA): the GPU may
    # idle meanwhile when the host is slower than the GPU (core.integrity.escaped_work)


Before = Callable[[int], None]  # harness work before sample i (i = -1: a warm-up call)


@dataclass
class Keep:
    """Which call of a batch gives the output the harness keeps, decided after each returns.

    window: the calls that may be kept; draw(n): a uniform integer in [0, n), drawn after a
    call returns (reservoir sampling: call i of the window replaces the kept output when
    draw(i + 1) == 0); take(i, out): copies call i's output (harness work, untimed)."""

    window: range
    draw: Callable[[int], int]
    take: Callable[[int, Any], None]


@dataclass
class Timed:
    """One side as the timing loop sees it.

    call:    one run() on the current inputs; returns the output
    before:  harness work enqueued before every sample: before(i) for sample i of a batch
             (fresh input values, an L2 flush), before(-1) before a warm-up call; not timed
    capture: take(i, out), the output of one call per batch, chosen after the calls return
    prepare: host-side work before each batch of k calls, outside its wall time: prepare(k)
             (draw k fresh input sets)
    calls:   run() calls one `call` makes (K for a graph replay); samples are divided by it
    max_calls: most samples one batch may hold (the fresh input sets that fit in memory)
    capture_within: the captured call is one of the batch's first this-many, never its
             first when it has more (a stateful side, checked by stepping the baseline
             through the same calls); None: any
    """

    call: Fn
    before: Before | None = None
    capture: Callable[[int, Any], None] | None = None
    prepare: Callable[[int], None] | None = None
    calls: int = 1
    max_calls: int | None = None
    capture_within: int | None = None


@dataclass
class StopPolicy:
    min_samples: int = 10
    min_time_s: float = 0.2  # per side
    max_samples: int = 2000  # per side
    max_time_s: float = 4.0  # per side, once every side has min_samples
    hard_time_s: float = 30.0  # per side, even before: a side slower than 3 s per call
    target_rel_ci: float = 0.01  # stop once the median is known to ±1%
    round_time_s: float = 0.025  # time per side per round
    fixed_samples: int | None = None  # --iterations: exactly this many, no adaptivity


# A pair gated on another goal (goodput, memory, compile time, simulated cost) reports its time
# beside that goal, as context the verdict does not use: known to ±5% or after 10 s per side is
# enough there. A goodput pair's offline call serves a whole request batch (~1.6 s on an H100):
# the ±1% rule ran it to the 30 s cap on each side, ~70 s a pair with its checks.
CONTEXT_REL_CI = 0.05
CONTEXT_TIME_S = 10.0


def context_policy(policy: StopPolicy) -> StopPolicy:
    """`policy` for a time reported beside another gated goal: at most ±5%, at most 10 s."""
    return replace(policy, target_rel_ci=max(policy.target_rel_ci, CONTEXT_REL_CI),
                   max_time_s=min(policy.max_time_s, CONTEXT_TIME_S),
                   hard_time_s=min(policy.hard_time_s, CONTEXT_TIME_S))


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
        l2_bytes = torch.cuda.get_device_properties(device).L2_cache_size
        self.buffer = torch.empty(max(2 * l2_bytes, 1 << 20), dtype=torch.uint8, device=device)

    def __call__(self) -> None:
        self.buffer.fill_(1)


def _bracket(fn: Callable[[], Any], pairs: list[tuple[Any, Any]]) -> Any:
    start, end = _Event(enable_timing=True), _Event(enable_timing=True)
    _record(start)
    out = fn()
    _record(end)
    pairs.append((start, end))
    return out


def _kept(keep: Keep | None, i: int) -> bool:
    """Whether call i's output replaces the kept one (drawn now, after the call returned)."""
    return keep is not None and i in keep.window and keep.draw(i - keep.window.start + 1) == 0


def measure_cuda(fn: Fn, n: int, before: Before | None = None, keep: Keep | None = None) -> Batch:
    starts = [_Event(enable_timing=True) for _ in range(n)]
    ends = [_Event(enable_timing=True) for _ in range(n)]
    if before is not None:  # made before the batch: constructing events costs the host too
        steps = [(_Event(enable_timing=True), _Event(enable_timing=True)) for _ in range(n)]
    harness: list[tuple[Any, Any]] = []
    captured_at, host_s = None, 0.0
    _synchronize()
    wall0 = _perf_counter()
    for i in range(n):
        if before is not None:
            t = _perf_counter()
            _record(steps[i][0])
            before(i)
            _record(steps[i][1])
            host_s += _perf_counter() - t
        _record(starts[i])
        out = fn()
        _record(ends[i])
        if _kept(keep, i):
            t = _perf_counter()
            _bracket(lambda kept=out: keep.take(i, kept), harness)
            host_s += _perf_counter() - t
            captured_at = i
        del out
    _synchronize()
    wall_ms = (_perf_counter() - wall0) * 1e3
    samples = [_elapsed(s, e) for s, e in zip(starts, ends)]
    if before is not None:
        harness.extend(steps)
    harness_ms = sum(_elapsed(s, e) for s, e in harness)
    return Batch(samples, wall_ms, harness_ms, captured_at, host_s * 1e3)


def measure_cpu(fn: Fn, n: int, before: Before | None = None, keep: Keep | None = None) -> Batch:
    samples, harness_ms, captured_at = [], 0.0, None
    wall0 = _perf_counter()
    for i in range(n):
        if before is not None:
            t = _perf_counter()
            before(i)
            harness_ms += (_perf_counter() - t) * 1e3
        t0 = _perf_counter()
        out = fn()
        samples.append((_perf_counter() - t0) * 1e3)
        if _kept(keep, i):
            t = _perf_counter()
            keep.take(i, out)
            harness_ms += (_perf_counter() - t) * 1e3
            captured_at = i
        del out
    wall_ms = (_perf_counter() - wall0) * 1e3
    return Batch(samples, wall_ms, harness_ms, captured_at)


def measurer(device: str) -> Callable[..., Batch]:
    return measure_cuda if device.startswith("cuda") else measure_cpu


def launch_gap_ms(device: str, calls: int = 200) -> float:
    """The host's own time between two samples of an empty call: loop and event overhead.

    An honest launch-bound side leaves about this much of each sample's wall time
    unaccounted for; the escape check allows a multiple of it (core.integrity)."""
    measure = measurer(device)
    measure(lambda: None, 20)  # warm the path
    batch = measure(lambda: None, calls)
    return max(0.0, (batch.wall_ms - sum(batch.samples_ms)) / calls)


@dataclass
class Probe:
    """One side's calls timed one at a time from an empty queue (ms)."""

    host_ms: float  # host time to enqueue one call (the least seen: interruptions only add;
    # the median of 5 once called a 10 µs kernel launch 197 µs, and its side host-bound)
    gpu_ms: float  # the span of the call's events on the timed stream (median)
    left_ms: float  # the device still busy after those events completed (the least seen):
    # work the call left on another stream, which no sample of it would hold


PROBE_CALLS = 5  # calls a host probe makes, one at a time...
PROBE_BUDGET_MS = 250.0  # ...fewer (at least 2) where that many would take longer than this


def probe_calls(samples_ms: dict[str, list[float]]) -> dict[str, int]:
    """How many calls to probe each side with, from its timed samples: PROBE_CALLS, fewer for
    a side whose calls take hundreds of ms (a 0.4 s training step probed 5 times cost 2 s a
    side, for a minimum that 2 calls give as well)."""
    def calls(samples: list[float]) -> int:
        if not samples:
            return PROBE_CALLS
        median = sorted(samples)[len(samples) // 2]
        return max(2, min(PROBE_CALLS, int(PROBE_BUDGET_MS / max(median, 1e-3))))
    return {name: calls(samples) for name, samples in samples_ms.items()}


def host_probe(fn: Fn, calls: int = PROBE_CALLS) -> Probe:
    """Time `calls` calls one by one, the queue empty at each start.

    A side whose host time reaches its GPU time is host-bound: its samples measure the
    host's launches (the GPU waits for them), not the GPU (README, 'Expectations'). A side
    whose device is still busy once its call's end event has completed left work on a stream
    the timing events never see (core.integrity.left_running)."""
    host, gpu, left = [], [], []
    for _ in range(calls):
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        _synchronize()
        t0 = _perf_counter()
        _record(start)
        fn()
        _record(end)
        host.append((_perf_counter() - t0) * 1e3)
        end.synchronize()
        t1 = _perf_counter()
        _synchronize()
        left.append((_perf_counter() - t1) * 1e3)
        gpu.append(_elapsed(start, end))
    return Probe(min(host), sorted(gpu)[len(gpu) // 2], min(left))


GRAPH_SAMPLE_MS = 0.5  # GPU time of one replay: the graph launch's few µs are ~1% of it
MAX_GRAPH_CALLS = 256


class GraphCaptureError(RuntimeError):
    """run() could not be captured in a CUDA graph (a host sync, a CPU tensor, ...)."""


def _capture(fn: Fn, calls: int) -> tuple[Any, Any]:
    graph = _CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            out = None
            for _ in range(calls):
                del out  # the private pool reuses a dropped output's memory for the next call
                out = fn()
    except Exception as exc:  # noqa: BLE001 - any failure to capture is the pair's problem
        raise GraphCaptureError(f"{type(exc).__name__}: {exc}") from exc
    return graph, out


def _agreed(capture: Callable[[], tuple[Any, Any]], agree: Agreement | None) -> tuple[Any, Any]:
    """A capture that succeeded on every rank, or GraphCaptureError on every rank (a rank
    that went on alone would replay collectives its peers never join)."""
    try:
        result, problem = capture(), None
    except GraphCaptureError as exc:
        result, problem = None, str(exc)
    if agree is not None and agree.any(problem is not None) and problem is None:
        raise GraphCaptureError("run() could not be captured on another rank")
    if problem is not None:
        raise GraphCaptureError(problem)
    return result


def graph_replay(fn: Fn, sample_ms: float = GRAPH_SAMPLE_MS,
                 agree: Agreement | None = None) -> tuple[Fn, int]:
    """Capture `fn` K times in one CUDA graph; return a call that replays the graph and
    returns the output of its last captured call (the graph's static output), and K.

    K makes one replay last about `sample_ms` of GPU time, so the host's launch of the graph
    (enqueued while the GPU idles after the start event) is a small share of the sample.
    `agree` (ranks of a multi-GPU pair): every rank captures rank 0's K, so the replayed
    collectives match."""
    stream = torch.cuda.Stream()  # warm-up off the capture path, as torch.cuda.graph asks
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    probe_calls = 4
    captured = _agreed(lambda: _capture(fn, probe_calls), agree)
    graph, out = captured
    _replay(graph)  # the first replay uploads the graph
    batch = measure_cuda(lambda: _replay(graph), 3)
    per_call = min(batch.samples_ms) / probe_calls
    calls = max(1, min(MAX_GRAPH_CALLS, math.ceil(sample_ms / max(per_call, 1e-4))))
    if agree is not None:
        calls = agree.from_rank0(calls)
    if calls != probe_calls:
        del graph, out, captured
        graph, out = _agreed(lambda: _capture(fn, calls), agree)
        _replay(graph)

    def replay() -> Any:
        _replay(graph)
        return out
    return replay, calls


def warm_up(fn: Fn, measure: Callable[..., Batch], min_calls: int = 3,
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


def interleaved(sides: dict[str, Timed | Fn], policy: StopPolicy, device: str = "cuda",
                warmup: int | None = None, before_round: Callable[[int], None] | None = None,
                after_round: Callable[[int], set[str]] | None = None,
                draw: Callable[[int], int] | None = None,
                after_batch: Callable[[str, Batch], bool] | None = None,
                agree: Agreement | None = None,
                decide: Callable[[int, dict[str, list[float]], dict[str, list[int]]], str | None]
                | None = None) -> Measurement:
    """Measure every side in alternating rounds until `policy` says stop.

    `before_round(round)` runs before each round (the child refills the inputs there);
    `after_round(round)` after it (the child checks the captured outputs); the sides it
    returns are dropped from further timing. `draw(n)` (a uniform integer below n) decides,
    after each call returns, whether its output replaces the kept one (Keep); the default
    draws from the kernel's entropy, which no pair can read beforehand.
    `after_batch(side, batch)` runs after each batch; a side for which it returns True is dropped.
    `agree` (ranks of a multi-GPU pair, core.ranks): every rank makes rank 0's choice of calls
    per round and of when to stop, and drops a side any rank drops, so all ranks call run()
    the same number of times (pass a fixed `warmup` then).
    `decide(round, samples, samples per round)`: when `policy` would go on, a reason to stop
    anyway (core.decided: a gate run whose verdict is known); not with `agree` or a fixed
    sample count.
    """
    timed = {name: s if isinstance(s, Timed) else Timed(s) for name, s in sides.items()}
    draw = draw or secrets.randbelow
    measure = measurer(device)
    warm, estimate_ms = {}, {}
    for name, side in timed.items():
        call = _with_before(side)
        if warmup is not None:
            for _ in range(warmup):
                call()
            estimate_ms[name] = measure(call, 1).samples_ms[0]
            warm[name] = warmup + 1
        else:
            estimate_ms[name], warm[name] = warm_up(call, measure)

    per_round = {
        name: max(1, min(200, int(policy.round_time_s * 1e3 / max(est, 1e-4))))
        for name, est in estimate_ms.items()
    }
    per_round = {name: min(k, timed[name].max_calls or k) for name, k in per_round.items()}
    if agree is not None:
        per_round = agree.from_rank0(per_round)
    if policy.fixed_samples is not None:  # at least two rounds, so the inputs change once
        cap = max(1, math.ceil(policy.fixed_samples / 2))
        per_round = {name: min(k, cap) for name, k in per_round.items()}
    samples: dict[str, list[float]] = {name: [] for name in timed}
    batches: dict[str, list[Batch]] = {name: [] for name in timed}
    spent_ms = {name: 0.0 for name in timed}  # GPU time of the samples, before dividing by calls
    checks_s = batches_s = 0.0  # host wall time of the checks between batches, of the batches
    grown = False  # whether _longer_rounds lengthened the rounds
    rounds = 0
    while True:
        rounds += 1
        started = _perf_counter()
        if before_round is not None:
            before_round(rounds)
        checks_s += _perf_counter() - started
        for name, side in list(timed.items()):
            k = per_round[name]
            if policy.fixed_samples is not None:
                k = min(k, policy.fixed_samples - len(samples[name]))
                if k <= 0:
                    continue
            keep = None
            if side.capture is not None:  # a bounded window starts after the first call
                first = 1 if side.capture_within and k > 1 else 0
                keep = Keep(range(first, max(first + 1, min(k, side.capture_within or k))), draw,
                            side.capture)
            if side.prepare is not None:
                side.prepare(k)
            batch = measure(side.call, k, side.before, keep)
            batches_s += batch.wall_ms / 1e3
            batches[name].append(batch)
            samples[name].extend(t / side.calls for t in batch.samples_ms)
            spent_ms[name] += sum(batch.samples_ms)
            started = _perf_counter()
            drop = after_batch is not None and after_batch(name, batch)  # before the next batch
            checks_s += _perf_counter() - started
            if agree is not None:
                drop = agree.any(drop)
            if drop:
                timed.pop(name)
                samples.pop(name)
        if after_round is not None:
            started = _perf_counter()
            dropped = after_round(rounds)
            checks_s += _perf_counter() - started
            for name in agree.union(dropped) if agree is not None else dropped:
                timed.pop(name, None)
                samples.pop(name, None)
        # rounds made longer are the bootstrap's units (core.stats): a known median stops the
        # timing only once there are enough of them, a cap stops it as ever
        reason = (_stop_reason(samples, policy, spent_ms, enough_rounds=not grown or
                               rounds >= MIN_ROUNDS)
                  if samples else "every side was dropped")
        if not reason and decide is not None and agree is None and policy.fixed_samples is None:
            reason = decide(rounds, samples, {name: [len(b.samples_ms) for b in batches[name]]
                                              for name in samples})
        if agree is not None:
            reason = agree.from_rank0(reason)
        if reason:
            return Measurement(samples, batches, rounds, reason, warm)
        if checks_s > batches_s and agree is None and policy.fixed_samples is None:
            longer = _longer_rounds(per_round, estimate_ms, policy, timed)
            grown = grown or longer != per_round
            per_round = longer


def _longer_rounds(per_round: dict[str, int], estimate_ms: dict[str, float],
                   policy: StopPolicy, timed: dict[str, Timed]) -> dict[str, int]:
    """Twice the samples per round for each side, up to 200 and up to what still leaves
    MIN_ROUNDS rounds before the time cap (the checks between rounds cost more than the
    rounds themselves; see the module docstring)."""
    longer = {}
    for name, k in per_round.items():
        most = int(policy.max_time_s * 1e3 / (MIN_ROUNDS * max(estimate_ms[name], 1e-4)))
        fits = timed[name].max_calls if name in timed else None  # dropped sides stay as they are
        longer[name] = max(k, min(2 * k, 200, most, fits or 200))
    return longer


def _with_before(side: Timed) -> Fn:
    """A warm-up call: the side's harness work before it (before(-1)), then the call."""
    if side.before is None:
        return side.call

    def call() -> Any:
        side.before(-1)
        return side.call()
    return call


def _stop_reason(samples: dict[str, list[float]], policy: StopPolicy,
                 spent_ms: dict[str, float] | None = None, enough_rounds: bool = True) -> str | None:
    counts = [len(s) for s in samples.values()]
    if policy.fixed_samples is not None:
        return "fixed sample count" if min(counts) >= policy.fixed_samples else None
    spent_ms = spent_ms or {}
    times_s = [spent_ms.get(name, sum(s)) / 1e3 for name, s in samples.items()]
    if max(counts) >= policy.max_samples:
        return f"sample cap ({policy.max_samples})"
    if max(times_s) >= policy.hard_time_s:
        return f"time cap ({policy.hard_time_s:g} s)"
    if max(times_s) >= policy.max_time_s and min(counts) >= policy.min_samples:
        return f"time cap ({policy.max_time_s:g} s)"
    if min(counts) < policy.min_samples or min(times_s) < policy.min_time_s or not enough_rounds:
        return None
    worst = max(summarize(s).rel_ci_halfwidth for s in samples.values())
    if worst <= policy.target_rel_ci:
        return f"median known to ±{worst:.2%}"
    return None
