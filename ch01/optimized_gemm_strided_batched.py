"""Optimized: one launch for the whole batch, matrix b at base + b * stride.

The cublasSgemmStridedBatched interface: when the matrices live in one tensor there is
no pointer array to build or read; each block computes its matrix's address.
"""
from __future__ import annotations

import torch

from ch01._gemm_common import BATCH, K, M, N, GemmBenchmark


class StridedBatchedGemm(GemmBenchmark):
    def launch(self, a: torch.Tensor, b: torch.Tensor) -> None:
        self.lib.launch_gemm_strided_batched(a, a.stride(0), b, b.stride(0),
                                             self.c, self.c.stride(0), BATCH, M, N, K)


get_benchmark = StridedBatchedGemm

if __name__ == "__main__":
    from core.single import main
    main(StridedBatchedGemm)
