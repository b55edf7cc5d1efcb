"""Shared by `streams` (and `adaptive_streams`): host data through the GPU and back, in chunks.

An offline inference job streams 128 MiB of fp32 rows (32768 × 1024) from pinned host memory
through a two-layer MLP (y = relu(x · W1) · W2, 1024 × 1024 fp32 weights) and back into
pinned host memory. Per chunk there are three stages: the copy in (H2D, one copy engine),
the two GEMMs (the SMs) and the copy out (D2H, another copy engine). The sizes make the three
comparable on an H100/H200 (~2.5 ms for each copy at ~54 GB/s, ~2.7 ms for the fp32 GEMMs at
~50 TFLOP/s), which is where overlapping them pays most: the ideal is max(copy, compute), a
third of their sum.

Both sides cut the rows into the same 8 chunks (`chunk_bounds`) and run the same GEMM shapes,
so their outputs are bit-identical; only the streams differ. Both use pinned memory: pinning
is chapter 3's lesson, and without it nothing overlaps. The answer lives in host memory, and
a host can only read it once the last copy has landed, so run() ends by waiting for it on
both sides.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

ROWS, FEATURES = 32768, 1024  # 128 MiB of fp32
CHUNKS = 8  # 16 MiB per chunk: each copy is long against its ~10 µs fixed cost
SLOTS = 3  # device buffers per direction: chunk i reuses slot i % SLOTS


def chunk_bounds(rows: int, chunks: int) -> list[tuple[int, int]]:
    """[start, stop) row ranges of `chunks` near-equal chunks covering `rows` rows, in order.

    The first `rows % chunks` chunks take one row more; no chunk is empty (at most `rows`
    chunks)."""
    if rows <= 0 or chunks <= 0:
        raise ValueError(f"need rows > 0 and chunks > 0, got rows={rows}, chunks={chunks}")
    chunks = min(chunks, rows)
    base, extra = divmod(rows, chunks)
    bounds, start = [], 0
    for i in range(chunks):
        stop = start + base + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, out: torch.Tensor) -> None:
    """out = relu(x · W1) · W2, the per-chunk compute, written into `out`."""
    torch.mm(torch.relu_(torch.mm(x, w1)), w2, out=out)


class StreamsBench(Benchmark):
    requires = Requirements(cuda=True)
    # Same chunks, same GEMM shapes, same kernels: the sides agree bit for bit. Against the
    # float64 reference, fp32 GEMMs with K = 1024 (TF32 off, torch's default) err ~1e-6.
    tolerance = Tolerance(rtol=0.0, atol=0.0)
    reference_tolerance = Tolerance(rtol=1e-4, atol=1e-4)
    rows, chunks = ROWS, CHUNKS

    def setup(self, ctx: BenchContext) -> None:
        gen = self.generator(ctx.seed)
        scale = FEATURES ** -0.5  # keeps activations ~N(0, 1) through both layers
        self.w1 = self.randn(FEATURES, FEATURES, gen=gen) * scale
        self.w2 = self.randn(FEATURES, FEATURES, gen=gen) * scale
        self.bounds = chunk_bounds(self.rows, self.chunks)
        most = max(stop - start for start, stop in self.bounds)
        self.d_in = [torch.empty(most, FEATURES, device=ctx.device) for _ in range(SLOTS)]
        self.d_out = [torch.empty(most, FEATURES, device=ctx.device) for _ in range(SLOTS)]
        self.out = torch.full((self.rows, FEATURES), float("nan"), pin_memory=True)

    def make_inputs(self, seed: int) -> torch.Tensor:
        # Drawn on the GPU (a CPU generator is slow, and the harness draws every round), then
        # copied into pinned host memory: where the job's data waits.
        drawn = self.randn(self.rows, FEATURES, gen=self.generator(seed))
        return torch.empty(drawn.shape, pin_memory=True).copy_(drawn)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        x64 = x.to(self.device, torch.float64)
        return (torch.relu(x64 @ self.w1.double()) @ self.w2.double()).cpu()

    def slot(self, i: int, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Chunk i's device input and output buffers (views of slot i % SLOTS)."""
        return self.d_in[i % SLOTS][: stop - start], self.d_out[i % SLOTS][: stop - start]

    def workload(self) -> Workload:
        # The rate column is the H2D link; the same bytes also come back D2H, on the other
        # copy engine, and 2 · rows · 1024² · 2 FLOPs run on the SMs.
        return Workload(link_bytes=self.rows * FEATURES * 4, link="h2d")
