"""Baseline: one kernel launch per matrix, looped on the host (see gemm.cu).

Each 256×256 product is 64 thread blocks, about half of an H100's 132 SMs, and every
launch waits for the previous one to drain: 256 small, half-empty launches in a row.
"""
from __future__ import annotations

import torch

from ch01._gemm_common import BATCH, K, M, N, GemmBenchmark


class PerMatrixGemm(GemmBenchmark):
    def launch(self, a: torch.Tensor, b: torch.Tensor) -> None:
        self.lib.launch_gemm_per_matrix(a, b, self.c, BATCH, M, N, K)


get_benchmark = PerMatrixGemm

if __name__ == "__main__":
    from core.single import main
    main(PerMatrixGemm)
