"""Optimized: the same GEMV on bf16 weights — half the bytes, so at most half the time.

The weight is rounded to bf16 once, in setup() (a model loaded with torch_dtype=bfloat16);
the fp32 activations are rounded on every call in run() (32 KiB, negligible), and the bf16
result is widened back to fp32 (the harness compares like dtypes; 112 KiB). Nothing about the
arithmetic matters at 1 FLOP/byte: the kernel streams 2 bytes per weight value instead of 4,
so the expected gain is the bytes ratio (≤ 2x) with both sides near the copy ceiling.
**Precision change declared**: the inputs' bf16 rounding and the output's; tolerance and its
derivation in _memory_bound_common.py.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch09._memory_bound_common import BF16_WEIGHTS_TOLERANCE, MemoryBoundBench
from core.benchmark import Workload


class Bf16Gemv(MemoryBoundBench):
    precision = "bf16 weights and inputs"  # declared: its workload() counts the narrower bytes
    tolerance = BF16_WEIGHTS_TOLERANCE

    def prepare(self) -> None:
        self.w16 = self.w.to(torch.bfloat16)
        del self.w  # the fp32 copy is not used by this side

    def run(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x.to(torch.bfloat16), self.w16).float()

    def workload(self) -> Workload:
        return self.gemv_workload(weight_bytes_per_value=2)


get_benchmark = Bf16Gemv

if __name__ == "__main__":
    from core.single import main
    main(Bf16Gemv)
