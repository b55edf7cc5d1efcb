"""Baseline: bf16 matmul on the tensor cores (cuBLAS, fp32 accumulate, bf16 output)."""
from __future__ import annotations

import torch

from ch09._fp8_gemm_common import Fp8GemmBench
from core.benchmark import Requirements


class Bf16Gemm(Fp8GemmBench):
    requires = Requirements(min_compute_capability=(8, 9))  # the pair needs fp8 tensor cores

    def run(self, a: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, self.b)


get_benchmark = Bf16Gemm

if __name__ == "__main__":
    from core.single import main
    main(Bf16Gemm)
