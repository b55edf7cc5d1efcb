"""Shared by the `gemm` pair: a batch of 256 small fp32 GEMMs, C[b] = A[b] @ B[b].

The three sides launch the same tile kernel from gemm.cu (one launch per matrix, one
batched launch over pointer arrays, one strided-batched launch), so their outputs are
bit-for-bit identical and the tolerance is exact. Because they share that tile code,
`reference()` also checks the baseline against float64 torch.bmm.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Tolerance, Workload
from core.cuda_pair import CudaPair

BATCH, M, N, K = 256, 256, 256, 256


class GemmBenchmark(CudaPair):
    """Loads gemm.cu and builds A, B per call; subclasses only choose how to launch."""

    source = "gemm.cu"  # loaded in setup(): listing targets needs neither nvcc nor a GPU
    # Same kernel code, same summation order: any difference at all is a bug.
    tolerance = Tolerance(rtol=0.0, atol=0.0)
    # fp32 tile sums against float64 torch.bmm (the old setup check's bounds): the exact
    # tolerance above is for the sides against each other, not against float64.
    reference_tolerance = Tolerance(rtol=1e-4, atol=1e-3)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.c = torch.full((BATCH, M, N), float("nan"), device=ctx.device)  # output buffer

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = self.generator(seed)
        return self.randn(BATCH, M, K, gen=gen), self.randn(BATCH, K, N, gen=gen)

    def launch(self, a: torch.Tensor, b: torch.Tensor) -> None:
        raise NotImplementedError

    def run(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        self.launch(*inputs)
        return self.c

    def reference(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        # The sides are compared with each other, which cannot catch a bug in the tile code
        # all three share; float64 torch.bmm can.
        a, b = inputs
        return torch.bmm(a.double(), b.double())

    def workload(self) -> Workload:
        return Workload(bytes=4.0 * BATCH * (M * K + K * N + M * N),
                        flops=2.0 * BATCH * M * N * K, flops_dtype="fp32")
