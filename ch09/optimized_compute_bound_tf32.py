"""Variant: the same fp32 product with TF32 tensor cores allowed (the one-flag first fix).

Same fp32 A (per call) and B (from setup(), unconverted), same `torch.matmul`, fp32 output;
the only change is `torch.backends.cuda.matmul.allow_tf32 = True`, set inside run() and
restored after (`cublas_tf32(True)`), never left on for the other sides of the pair. cuBLAS
then picks a TF32 GEMM: the tensor cores read each fp32 operand with 10 stored mantissa bits
(HGMMA with tf32 operands on Hopper) and accumulate in fp32, at several times the fp32
CUDA-core rate. No conversion pass and no extra bytes: this is what one line in a training
script buys before anyone touches dtypes, and the bf16 side's extra speed is measured
against it. **Precision change declared**: the inputs' TF32 rounding (≤ 2^-11 relative);
tolerance and its derivation in _compute_bound_common.py.
"""
from __future__ import annotations

import torch

from ch09._compute_bound_common import (FLOPS, K, M, N, TF32_INPUT_TOLERANCE,
                                        ComputeBoundBench, cublas_tf32)
from core.benchmark import Requirements, Workload


class Tf32Matmul(ComputeBoundBench):
    precision = "tf32 tensor-core math"  # declared: its workload() counts the narrower bytes
    requires = Requirements(min_compute_capability=(8, 0))  # TF32 tensor cores (Ampere+)
    tolerance = TF32_INPUT_TOLERANCE

    def run(self, a: torch.Tensor) -> torch.Tensor:
        with cublas_tf32(True):  # TF32 tensor cores for this call only
            return torch.matmul(a, self.b)

    def workload(self) -> Workload:
        # Same bytes as the baseline (fp32 in, fp32 out); FLOPs judged against the TF32 ceiling.
        return Workload(bytes=4 * (M * K + K * N + M * N), flops=FLOPS, flops_dtype="tf32")


get_benchmark = Tf32Matmul

if __name__ == "__main__":
    from core.single import main
    main(Tf32Matmul)
