"""Baseline: nn.Linear then nn.GELU, as a model writes it.

`F.linear(x, W, b)` is one cuBLAS(Lt) matmul with the bias folded in (torch hands a 1-D
bias to cuBLASLt's bias epilogue where it can), and it writes the pre-activation to memory;
`F.gelu` is a second kernel that reads those 256 MiB back and writes the activation.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch14._gemm_epilogue_common import EpilogueBench


class LinearThenGelu(EpilogueBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(F.linear(x, self.w, self.b), approximate="tanh")


get_benchmark = LinearThenGelu

if __name__ == "__main__":
    from core.single import main
    main(LinearThenGelu)
