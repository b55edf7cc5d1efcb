"""Baseline: the bf16 linear layer, `F.linear(x, W)` (cuBLAS bf16 GEMM, fp32 accumulation).

The precision an inference stack serves in before it quantizes anything: bf16 weights and
activations. (A bf16 start on purpose: an fp32 baseline would fold bf16's gain into fp8's.)
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch19._fp8_linear_common import LinearBench


class Bf16Linear(LinearBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight)


get_benchmark = Bf16Linear

if __name__ == "__main__":
    from core.single import main
    main(Bf16Linear)
