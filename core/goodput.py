"""Goodput: requests per second that meet their latency targets, measured from the client side.

Serving techniques (continuous batching, chunked prefill, disaggregation, routing) do not make
one call faster; they let more requests meet their time-to-first-token (TTFT) and time-per-
output-token (TPOT) targets. Their measure is a replay: a fixed, seeded request trace
(arrival times, prompts, output lengths) played against the engine in real time.

The harness is the client, and the clock is the harness's: `replay()` submits each request
when its arrival time comes, calls the engine's `step()` while work remains, and stamps each
token when `step()` hands it over on the host. An engine cannot report its own latencies,
and a token counts only once it has been returned. `summarize()` turns the stamps into TTFT
and TPOT percentiles, tokens/s, and goodput at an SLO. Between arrivals, when the engine has
nothing to run, the client waits for the next arrival: an open-loop load generator, as
vLLM's `benchmark_serving` is.
"""
from __future__ import annotations

import gc
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Protocol

import numpy as np

REPLAYS = 3  # per side, sides alternating, each round on trace(seed) of a fresh harness seed


@dataclass(frozen=True)
class Request:
    id: int
    arrival_s: float  # seconds after the replay starts
    prompt: tuple[int, ...]  # token ids
    max_new: int  # tokens to generate (greedy decoding runs to exactly this many)


@dataclass(frozen=True)
class Trace:
    """A published request trace: the README of a goodput pair prints how it was drawn."""

    requests: tuple[Request, ...]
    description: str


def poisson_trace(seed: int, requests: int, rate_rps: float, prompt_len: tuple[int, int],
                  output_len: tuple[int, int], vocab: int, token_seed: int | None = None) -> Trace:
    """`requests` arrivals of a Poisson process at `rate_rps`, prompt and output lengths drawn
    uniformly from the inclusive ranges, prompt tokens uniform over the vocabulary.

    `seed` draws the trace's shape (arrivals and lengths); `token_seed`, when given, draws the
    prompt tokens instead. A serving pair replays one published shape every round with fresh
    tokens from the harness's seed: the engines cannot have their answers ready, and each
    round asks the same work of them, so rounds differ by how the engines ran, not by how
    bursty the round's arrivals were."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate_rps, size=requests)
    arrivals = np.cumsum(gaps) - gaps[0]  # the first request arrives at t = 0
    lengths = rng.integers(prompt_len[0], prompt_len[1] + 1, size=requests)
    outputs = rng.integers(output_len[0], output_len[1] + 1, size=requests)
    tokens = rng if token_seed is None else np.random.default_rng(token_seed)
    built = tuple(Request(i, float(arrivals[i]),
                          tuple(int(t) for t in tokens.integers(0, vocab, size=int(lengths[i]))),
                          int(outputs[i])) for i in range(requests))
    drawn = f"numpy seed {seed}" + ("" if token_seed is None else f", prompt tokens from seed {token_seed}")
    return Trace(built, f"{requests} requests, Poisson arrivals at {rate_rps:g}/s, prompts "
                        f"{prompt_len[0]}-{prompt_len[1]} tokens, outputs {output_len[0]}-"
                        f"{output_len[1]} tokens, uniform; {drawn}")


def warm_up_trace(trace: Trace) -> Trace:
    """The whole of `trace` (another seed's tokens, the same arrivals and lengths) for the
    uncounted round before the counted ones. Not a part of it: on 4xH200 (2026-11-28) every
    side's first replay of a trace shape, at every rate of ch15.sweep_rates, met far fewer
    SLOs than its second (ch17's blocking baseline 38% then 100% at 12 requests/s, 9% then
    100% for the TTFT-heavy trace at 20/s; ch15's monolithic one 35% then 100% at 10/s):
    the first replay pays costs per prompt length, and the first 16 requests held 16 of the
    trace's 64 lengths."""
    return Trace(trace.requests, f"warm-up: the whole of {trace.description}")


class Engine(Protocol):
    """What a serving pair's side exposes to the replay."""

    def add(self, request: Request) -> None:
        """Queue a request; it must not block on the GPU."""

    def step(self) -> list[tuple[int, int]]:
        """Run one scheduler iteration; return the (request id, token) pairs it produced, as
        host integers (so they are done)."""

    def idle(self) -> bool:
        """True when nothing is queued or running."""


@dataclass
class RequestTiming:
    id: int
    arrival_s: float
    token_s: list[float] = field(default_factory=list)  # when each token reached the client
    tokens: list[int] = field(default_factory=list)

    @property
    def ttft_s(self) -> float:
        return self.token_s[0] - self.arrival_s

    @property
    def tpot_s(self) -> float:
        """Mean time per output token after the first (0 for a one-token answer)."""
        if len(self.token_s) < 2:
            return 0.0
        return (self.token_s[-1] - self.token_s[0]) / (len(self.token_s) - 1)


class ReplayError(RuntimeError):
    """The engine broke the replay's rules (a token for an unknown or finished request, too
    few tokens, no progress)."""


def replay(engine: Engine, trace: Trace, clock: Callable[[], float] = time.perf_counter,
           wait: Callable[[float], None] = time.sleep, stall_s: float = 60.0) -> list[RequestTiming]:
    """Play `trace` against `engine` in real time; returns each request's token stamps.

    The heap is collected before the clock starts: replays alternate sides, and garbage the
    side before left behind (a replay's requests, tensors, token lists) would otherwise be
    collected during this one, in the middle of serving it, which charges this side for it.
    What survives is frozen for the replay (`gc.freeze`, undone after it), so a collection
    during it scans what the replay made, not torch's and the models' objects: a full one
    over that heap can stall the serving loop for tens of milliseconds, which near the knee
    queues up (a side's first counted replay after the warm-up met 89% of the SLOs where its
    second met 100% on 2xH200, 2026-11-28; the collections are a suspect, not a proof)."""
    gc.collect()
    gc.freeze()
    try:
        return _replay(engine, trace, clock, wait, stall_s)
    finally:
        gc.unfreeze()


def _replay(engine: Engine, trace: Trace, clock: Callable[[], float],
            wait: Callable[[float], None], stall_s: float) -> list[RequestTiming]:
    pending = sorted(trace.requests, key=lambda r: r.arrival_s)
    wanted = {r.id: r.max_new for r in trace.requests}
    timings = {r.id: RequestTiming(r.id, r.arrival_s) for r in trace.requests}
    start = clock()
    last_progress = 0.0
    while pending or not engine.idle():
        now = clock() - start
        while pending and pending[0].arrival_s <= now:
            engine.add(pending.pop(0))
        if engine.idle():
            wait(max(0.0, pending[0].arrival_s - (clock() - start)))  # until the next arrival
            engine.add(pending.pop(0))  # its time has come (a sleep may end a hair early)
            continue
        emitted = engine.step()
        stamp = clock() - start
        for request_id, token in emitted:
            timing = timings.get(request_id)
            if timing is None or len(timing.tokens) >= wanted[request_id]:
                raise ReplayError(f"the engine returned a token for request {request_id}, "
                                  f"which is unknown or already has all its tokens")
            timing.tokens.append(int(token))
            timing.token_s.append(stamp)
        if emitted:
            last_progress = stamp
        elif stamp - last_progress > stall_s:
            raise ReplayError(f"no token for {stall_s:g} s while the engine was busy")
    short = [t.id for t in timings.values() if len(t.tokens) != wanted[t.id]]
    if short:
        raise ReplayError(f"requests {short[:5]} ended with fewer tokens than asked for")
    return [timings[r.id] for r in trace.requests]


@dataclass(frozen=True)
class SLO:
    ttft_s: float
    tpot_s: float

    def __str__(self) -> str:
        return f"TTFT ≤ {self.ttft_s * 1e3:g} ms and TPOT ≤ {self.tpot_s * 1e3:g} ms"


@dataclass(frozen=True)
class GoodputStats:
    requests: int
    duration_s: float  # first arrival to last token
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    tokens_per_s: float
    met: int  # requests meeting the SLO
    goodput_rps: float  # met / duration
    unserved: int = 0  # requests turned away (a simulated admission policy): misses

    @property
    def attained(self) -> float:
        return self.met / self.requests if self.requests else math.nan

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def median_goodput(stats: list[GoodputStats]) -> float:
    return float(np.median([s.goodput_rps for s in stats]))


def paired_ratios(baseline: list[GoodputStats], optimized: list[GoodputStats]) -> list[float] | None:
    """Optimized over baseline goodput round by round, when both replayed the same rounds.

    Each round is one trace, served by the sides back to back (core.child), so a slow round
    (the host's clock drifting, a noisy neighbour) slows both: its ratio keeps what the
    technique buys and drops what the round did to both. None when the rounds do not line up."""
    if not baseline or len(baseline) != len(optimized):
        return None
    return [o.goodput_rps / b.goodput_rps if b.goodput_rps > 0 else math.inf
            for b, o in zip(baseline, optimized)]


def goodput_ratio(baseline: list[GoodputStats], optimized: list[GoodputStats]) -> float:
    """The median of the per-round ratios (inf when the baseline met no SLO); unpaired
    replays: the ratio of the medians."""
    paired = paired_ratios(baseline, optimized)
    if paired:
        return float(np.median(paired))
    base = median_goodput(baseline)
    return median_goodput(optimized) / base if base > 0 else math.inf


def ratio_interval(baseline: list[GoodputStats], optimized: list[GoodputStats]) -> tuple[float, float]:
    """The range of the per-round ratios; for unpaired replays, the widest ratio they allow."""
    paired = paired_ratios(baseline, optimized)
    if paired:
        return min(paired), max(paired)
    b = [s.goodput_rps for s in baseline]
    o = [s.goodput_rps for s in optimized]
    if min(b) <= 0:
        return (min(o) / max(b), math.inf) if max(b) > 0 else (math.inf, math.inf)
    return min(o) / max(b), max(o) / min(b)


def summarize(timings: list[RequestTiming], slo: SLO) -> GoodputStats:
    """Percentiles over the served requests, tokens/s and goodput over the replay's duration
    (first arrival to last token). A request with no token was turned away: it counts in
    `requests` and `unserved`, never in `met` (a real replay serves every request in full)."""
    served = [t for t in timings if t.token_s]
    if not served:
        raise ReplayError("no request was served")
    ttft = np.array([t.ttft_s for t in served])
    tpot = np.array([t.tpot_s for t in served])
    duration = max(t.token_s[-1] for t in served) - min(t.arrival_s for t in timings)
    met = int(np.sum((ttft <= slo.ttft_s) & (tpot <= slo.tpot_s)))
    tokens = sum(len(t.tokens) for t in served)
    return GoodputStats(
        requests=len(timings), unserved=len(timings) - len(served), duration_s=duration,
        ttft_p50_s=float(np.percentile(ttft, 50)), ttft_p99_s=float(np.percentile(ttft, 99)),
        tpot_p50_s=float(np.percentile(tpot, 50)), tpot_p99_s=float(np.percentile(tpot, 99)),
        tokens_per_s=tokens / duration, met=met, goodput_rps=met / duration)


def token_table(timings: list[RequestTiming]) -> list[list[int]]:
    """Each request's tokens, in trace order: what two sides must agree on exactly (greedy)."""
    return [list(t.tokens) for t in timings]


def load_test(trace_of: Callable[[int], Trace], new_engine: Callable[[], Engine], duration_s: float,
              seed: int, clock: Callable[[], float] = time.perf_counter,
              wait: Callable[[float], None] = time.sleep) -> tuple[list[RequestTiming], int]:
    """`aisp tools load-test`: replay traces back to back on fresh engines until `duration_s`
    has passed, after one warm-up replay that is not counted. Trace k is `trace_of(seed + k)`.
    Returns the timings of the counted replays and how many replays they were."""
    replay(new_engine(), trace_of(seed), clock=clock, wait=wait)  # warm-up: compile, allocate
    kept: list[RequestTiming] = []
    started, replays = clock(), 0
    while clock() - started < duration_s or not replays:
        replays += 1
        offset = clock() - started  # each replay's stamps start at 0: put them on one time axis
        for timing in replay(new_engine(), trace_of(seed + replays), clock=clock, wait=wait):
            timing.arrival_s += offset
            timing.token_s = [t + offset for t in timing.token_s]
            kept.append(timing)
    return kept, replays
