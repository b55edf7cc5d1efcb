"""Baseline: the decode GEMV on fp32 weights (a model loaded in its default dtype).

F.linear(x, W) with W in fp32: cuBLAS streams 4 bytes per weight value for one multiply-add.
TF32 is switched off inside run() and restored after (`cublas_tf32(False)`, as in
`compute_bound`): it would not change the time of a memory-bound GEMV, but the flag is
process-wide, and this side's answer must not depend on what another side leaves behind.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch09._compute_bound_common import cublas_tf32
from ch09._memory_bound_common import MemoryBoundBench
from core.benchmark import Workload


class Fp32Gemv(MemoryBoundBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        with cublas_tf32(False):  # true fp32 math (no effect on a GEMV's speed)
            return F.linear(x, self.w)

    def workload(self) -> Workload:
        return self.gemv_workload(weight_bytes_per_value=4)


get_benchmark = Fp32Gemv

if __name__ == "__main__":
    from core.single import main
    main(Fp32Gemv)
