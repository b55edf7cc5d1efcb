"""Baseline: the epilogue in eager PyTorch, one kernel per op.

`F.gelu(x * w + b) * torch.sigmoid(x) + x` launches six elementwise kernels; each reads its
operands from HBM and writes a full-size intermediate back (14 x 256 MiB of traffic in all,
where the function needs 2 x 256 MiB).
"""
from __future__ import annotations

import torch

from ch09._elementwise_fusion_common import ElementwiseBench, epilogue


class EagerEpilogue(ElementwiseBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        return epilogue(x, self.w, self.b)


get_benchmark = EagerEpilogue

if __name__ == "__main__":
    from core.single import main
    main(EagerEpilogue)
