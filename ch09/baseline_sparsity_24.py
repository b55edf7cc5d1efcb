"""Baseline: the pruned weight multiplied as a dense bf16 matrix (cuBLAS).

What a model pruned to 2:4 runs by default: the zeros are stored and multiplied like any
other value, so pruning alone saves neither bytes nor time.
"""
from __future__ import annotations

import torch

from ch09._sparsity_24_common import Sparsity24Bench


class DenseMatmul(Sparsity24Bench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(self.w, x)


get_benchmark = DenseMatmul

if __name__ == "__main__":
    from core.single import main
    main(DenseMatmul)
