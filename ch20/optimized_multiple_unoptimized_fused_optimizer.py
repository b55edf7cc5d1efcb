"""Stage `fused_optimizer` (this fix alone, on top of the baseline): AdamW(fused=True) (ch13).

`foreach=False` runs AdamW's update as a Python loop over 51 parameter tensors, about a
dozen small kernels each; `fused=True` updates every tensor in a few launches of one kernel
that reads each parameter, gradient and moment once. Same math in fp32; the fused kernel
orders its arithmetic slightly differently (FP32_TOLERANCE).
"""
from __future__ import annotations

from ch20._multiple_unoptimized_common import FP32_TOLERANCE, TrainingJob


class FusedOptimizer(TrainingJob):
    fused_optimizer = True
    tolerance = FP32_TOLERANCE


get_benchmark = FusedOptimizer

if __name__ == "__main__":
    FusedOptimizer.main()
