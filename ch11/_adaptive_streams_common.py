"""Shared by `adaptive_streams`: a mix of job shapes through one chunked multi-stream pipeline.

Each call processes four jobs of different shapes, the kind of mix an offline scoring service
sees: fp32 rows in pinned host memory go through a two-layer MLP (`streams`' relu(x·W1)·W2)
and back to pinned host memory. The jobs differ in size and in how compute compares to copy:

    4 MiB  (1024 × 1024)    small: fixed costs per copy and per GEMM matter
    32 MiB (8192 × 1024)    medium
    128 MiB (32768 × 1024)  large, copy ≈ compute (`streams`' job)
    64 MiB (4096 × 4096)    compute-heavy: 4096² weights, ~4× more FLOPs per byte

Both sides run the same pipeline (`run_jobs`): a job is cut into `chunks` chunks, and chunk i
runs its copy in, compute and copy out on stream i % `streams` (the round-robin of CUDA's
simpleStreams sample). Chunks on one stream reuse that stream's device buffers, in order.
The sides differ only in the (chunks, streams) plan per job: the baseline's is fixed, the
optimized side chooses one per job in setup() from probed copy and compute times
(`choose_plan`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ch11._streams_common import chunk_bounds, mlp
from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

JOBS = ((1024, 1024), (8192, 1024), (32768, 1024), (4096, 4096))  # (rows, features)
CHUNK_CHOICES = (1, 2, 4, 8, 16, 32)
STREAM_CHOICES = (1, 2, 3, 4)


@dataclass(frozen=True)
class Phase:
    """A stage's time for a chunk holding a fraction f of the job: fixed_ms + whole_ms · f."""

    fixed_ms: float
    whole_ms: float

    def chunk_ms(self, chunks: int) -> float:
        return self.fixed_ms + self.whole_ms / chunks

    @classmethod
    def fit(cls, full_ms: float, part_ms: float, fraction: float) -> Phase:
        """The line through (1, full_ms) and (fraction, part_ms), clamped to non-negative
        parts (timing noise can put a small measurement above a proportional share)."""
        if not 0.0 < fraction < 1.0:
            raise ValueError(f"fraction must be in (0, 1), got {fraction}")
        whole = max(0.0, (full_ms - part_ms) / (1.0 - fraction))
        fixed = max(0.0, full_ms - whole)
        return cls(fixed, min(whole, full_ms))


def predicted_ms(h2d: Phase, compute: Phase, d2h: Phase, chunks: int, streams: int) -> float:
    """The pipeline's time for a plan, from its stages' times.

    One stream runs every stage of every chunk in turn. With several, two limits hold: each
    resource (H2D engine, SMs, D2H engine) runs one chunk at a time, so the slowest stage sets
    the pace after the first chunk fills the pipeline; and each stream runs its own chunks'
    three stages in turn."""
    a, b, c = (p.chunk_ms(chunks) for p in (h2d, compute, d2h))
    if streams <= 1:
        return chunks * (a + b + c)
    pipeline = (a + b + c) + (chunks - 1) * max(a, b, c)
    per_stream = math.ceil(chunks / streams) * (a + b + c)
    return max(pipeline, per_stream)


def choose_plan(h2d: Phase, compute: Phase, d2h: Phase, rows: int,
                chunk_choices: tuple[int, ...] = CHUNK_CHOICES,
                stream_choices: tuple[int, ...] = STREAM_CHOICES,
                margin: float = 0.03) -> tuple[int, int]:
    """(chunks, streams) with the least predicted time; among plans within `margin` of the
    best, the one with fewest chunks, then fewest streams (less launch work, fewer buffers)."""
    plans = [(n, s) for n in chunk_choices if n <= rows for s in stream_choices if s <= n]
    if not plans:
        raise ValueError(f"no plan fits {rows} rows")
    times = {p: predicted_ms(h2d, compute, d2h, *p) for p in plans}
    best = min(times.values())
    return min(p for p, t in times.items() if t <= best * (1.0 + margin))


class AdaptiveStreamsBench(Benchmark):
    requires = Requirements(cuda=True)
    # Different plans cut the jobs into different chunks, so the GEMMs run with different M
    # (possibly other kernels, another order of summation): fp32 agreement, not bit equality.
    tolerance = Tolerance(rtol=1e-4, atol=1e-4)
    reference_tolerance = Tolerance(rtol=1e-4, atol=1e-4)

    def plans(self) -> list[tuple[int, int]]:
        """(chunks, streams) per job, in JOBS order."""
        raise NotImplementedError

    def setup(self, ctx: BenchContext) -> None:
        gen = self.generator(ctx.seed)
        self.weights = {f: (self.randn(f, f, gen=gen) * f ** -0.5, self.randn(f, f, gen=gen) * f ** -0.5)
                        for f in sorted({f for _, f in JOBS})}
        self.outs = [torch.full((r, f), float("nan"), pin_memory=True) for r, f in JOBS]
        self.plan = self.plans()
        self.build_pipeline(self.plan)

    def build_pipeline(self, plan: list[tuple[int, int]]) -> None:
        """Streams and per-stream device buffers big enough for every job's largest chunk."""
        streams = max(s for _, s in plan)
        floats = max(math.ceil(r / n) * f for (r, f), (n, _) in zip(JOBS, plan))
        self.streams = [torch.cuda.Stream() for _ in range(streams)]
        self.buffers = [(torch.empty(floats, device=self.device), torch.empty(floats, device=self.device))
                        for _ in range(streams)]

    def make_inputs(self, seed: int) -> list[torch.Tensor]:
        gen = self.generator(seed)
        drawn = [self.randn(r, f, gen=gen) for r, f in JOBS]
        return [torch.empty(d.shape, pin_memory=True).copy_(d) for d in drawn]

    def run(self, jobs: list[torch.Tensor]) -> list[torch.Tensor]:
        caller = torch.cuda.current_stream()
        for stream in self.streams:
            stream.wait_stream(caller)
        for x, out, (chunks, streams) in zip(jobs, self.outs, self.plan):
            w1, w2 = self.weights[x.shape[1]]
            for i, (start, stop) in enumerate(chunk_bounds(x.shape[0], chunks)):
                stream, (d_in, d_out) = self.streams[i % streams], self.buffers[i % streams]
                shape = (stop - start, x.shape[1])
                d_in, d_out = d_in[: shape[0] * shape[1]].view(shape), d_out[: shape[0] * shape[1]].view(shape)
                with torch.cuda.stream(stream):  # one stream: copy in, compute, copy out in order
                    d_in.copy_(x[start:stop], non_blocking=True)
                    mlp(d_in, w1, w2, d_out)
                    out[start:stop].copy_(d_out, non_blocking=True)
        for stream in self.streams:
            caller.wait_stream(stream)
        caller.synchronize()  # the answers are in host memory: wait for them
        return list(self.outs)

    def reference(self, jobs: list[torch.Tensor]) -> list[torch.Tensor]:
        out = []
        for x in jobs:
            w1, w2 = self.weights[x.shape[1]]
            x64 = x.to(self.device, torch.float64)
            out.append((torch.relu(x64 @ w1.double()) @ w2.double()).cpu())
        return out

    def workload(self) -> Workload:
        # H2D bytes of the four jobs (228 MiB); as many come back D2H.
        return Workload(link_bytes=sum(r * f * 4 for r, f in JOBS), link="h2d")
