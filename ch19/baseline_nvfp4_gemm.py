"""Baseline: the bf16 linear layer (as in fp8_linear), on a Blackwell GPU.

It requires compute capability 10.0 like its optimized side, so that on Hopper the whole row
SKIPs with the reason instead of timing a baseline nothing is compared with.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch19._nvfp4_gemm_common import Nvfp4Bench


class Bf16LinearOnBlackwell(Nvfp4Bench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight)


get_benchmark = Bf16LinearOnBlackwell

if __name__ == "__main__":
    from core.single import main
    main(Bf16LinearOnBlackwell)
