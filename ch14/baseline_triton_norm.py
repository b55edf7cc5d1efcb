"""Baseline: torch's own RMSNorm, `F.rms_norm`, the call an engineer writes first.

On a GPU it is aten's fused kernel: one pass that reads x, reduces each row in fp32 and
writes y, so the Triton kernel has to win on how well it does that pass, not on fusion.
(The formula spelled out as eager ops is `triton_norm_fusion`, the chapter's teaching pair.)
"""
from __future__ import annotations

import torch

from ch14._triton_norm_common import NormBench, rms_norm


class TorchRMSNorm(NormBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.w)


get_benchmark = TorchRMSNorm

if __name__ == "__main__":
    from core.single import main
    main(TorchRMSNorm)
