"""Shared by the `gemm` pair: a batch of 256 small fp32 GEMMs, C[b] = A[b] @ B[b].

The three sides launch the same tile kernel from gemm.cu (one launch per matrix, one
batched launch over pointer arrays, one strided-batched launch), so their outputs are
bit-for-bit identical and the tolerance is exact.
"""
from __future__ import annotations

from pathlib import Path

import torch

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload
from core.cuda import CudaLibrary, load

BATCH, M, N, K = 256, 256, 256, 256


class GemmBenchmark(Benchmark):
    """Builds the inputs and loads gemm.cu; subclasses only choose how to launch."""

    requires = Requirements(nvcc=True)
    # Same kernel code, same summation order: any difference at all is a bug.
    tolerance = Tolerance(rtol=0.0, atol=0.0)

    def setup(self, ctx: BenchContext) -> None:
        # Built and loaded here, not at import, so listing targets needs neither nvcc nor a GPU.
        self.lib: CudaLibrary = load(Path(__file__).with_name("gemm.cu"))
        g = torch.Generator(device=ctx.device).manual_seed(ctx.seed)
        self.a = torch.randn(BATCH, M, K, generator=g, device=ctx.device)
        self.b = torch.randn(BATCH, K, N, generator=g, device=ctx.device)
        self.c = torch.empty(BATCH, M, N, device=ctx.device)
        self.prepare()
        self._check_against_reference()

    def prepare(self) -> None:
        """Per-variant setup (e.g. the batched variant's pointer arrays)."""

    def launch(self) -> None:
        raise NotImplementedError

    def run(self) -> torch.Tensor:
        self.launch()
        return self.c

    def workload(self) -> Workload:
        return Workload(bytes=4.0 * BATCH * (M * K + K * N + M * N),
                        flops=2.0 * BATCH * M * N * K, flops_dtype="fp32")

    def _check_against_reference(self) -> None:
        # The harness compares the variants with each other, which cannot catch a bug in
        # the tile code all three share; so check once against float64 torch.bmm.
        self.launch()
        expected = torch.bmm(self.a.double(), self.b.double())
        torch.testing.assert_close(self.c.double(), expected, rtol=1e-4, atol=1e-3,
                                   msg=lambda m: f"gemm.cu disagrees with torch.bmm: {m}")
        self.c.fill_(float("nan"))  # run() must compute C itself (the harness checks)
