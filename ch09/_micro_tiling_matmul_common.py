"""Shared by the `micro_tiling_matmul` pair: fp32 4096 x 4096 x 4096 (137 GFLOP per run).

Both kernels (micro_tiling_matmul.cu) accumulate every output in one fp32 register with
FMAs in k order 0..K-1, so they agree bit for bit; the tolerance below is the chapter 7
fp32 matmul tolerance, kept for a compiler that contracted differently. setup() also
checks the side's kernel once against a float64 torch.matmul, which the pair's own
comparison (two kernels of one file) cannot replace.
"""
from __future__ import annotations

import torch

from core.benchmark import Tolerance, Workload
from core.cuda_pair import CudaPair

M = N = K = 4096


class MicroTilingBench(CudaPair):
    source = "micro_tiling_matmul.cu"
    tolerance = Tolerance(rtol=1e-4, atol=1e-4)

    def make_inputs(self) -> None:
        self.a = self.randn(M, K)
        self.b = self.randn(K, N)
        self.c = torch.full((M, N), float("nan"), device=self.device)
        self._check_against_float64()

    def _check_against_float64(self) -> None:
        # Sequential fp32 summation of 4096 products of size ~1 drifts ~5e-5 from the exact
        # sum (up to ~1e-3 at the tails); an indexing bug errs by ~sqrt(K) = 64.
        got = self.run().double()
        expected = torch.matmul(self.a.double(), self.b.double())
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-2,
                                   msg=lambda m: f"micro_tiling_matmul.cu disagrees with float64 "
                                                 f"torch.matmul: {m}")
        self.c.fill_(float("nan"))  # run() must compute C itself (the harness checks)

    def workload(self) -> Workload:
        return Workload(bytes=4 * (M * K + K * N + M * N), flops=2 * M * N * K, flops_dtype="fp32")
