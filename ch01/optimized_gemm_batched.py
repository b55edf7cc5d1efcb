"""Optimized: one launch for the whole batch through arrays of matrix pointers.

The cublasSgemmBatched interface: blockIdx.z picks the matrix, so one grid of
256 × 64 blocks fills every SM and the batch pays one launch latency, not 256.
The pointers may point anywhere (a list of separately allocated matrices works).
"""
from __future__ import annotations

import torch

from ch01._gemm_common import BATCH, K, M, N, GemmBenchmark


def pointer_array(batch: torch.Tensor) -> torch.Tensor:
    """Device array of the addresses of batch[0], batch[1], ... (int64, like float**)."""
    return torch.tensor([m.data_ptr() for m in batch], dtype=torch.int64, device=batch.device)


class BatchedGemm(GemmBenchmark):
    def prepare(self) -> None:
        # Built once here: copying pointers to the device is setup, not the measured work.
        self.a_ptrs, self.b_ptrs, self.c_ptrs = (pointer_array(t) for t in (self.a, self.b, self.c))

    def launch(self) -> None:
        self.lib.launch_gemm_batched(self.a_ptrs, self.b_ptrs, self.c_ptrs, BATCH, M, N, K)


def get_benchmark() -> BatchedGemm:
    return BatchedGemm()


if __name__ == "__main__":
    from core.single import main

    main(get_benchmark)
