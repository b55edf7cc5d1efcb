"""Reference point: the same product through torch.matmul, i.e. cuBLAS(Lt).

Not a Triton kernel: it is here so the report prints the Triton kernels against the
vendor library on the same GPU and inputs (speedup of cuBLAS over the naive Triton kernel;
divide the tuned kernel's speedup by this one for "% of cuBLAS").
"""
from __future__ import annotations

import torch

from ch09._triton_matmul_common import MatmulBench
from core.benchmark import Requirements


class CublasMatmul(MatmulBench):
    requires = Requirements(min_compute_capability=(8, 0))  # no triton needed

    def run(self, a: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, self.b)


get_benchmark = CublasMatmul

if __name__ == "__main__":
    from core.single import main
    main(CublasMatmul)
