"""Baseline: fp32 matmul on the CUDA cores (cuBLAS SGEMM, TF32 off).

With TF32 disabled torch.matmul runs a full-precision fp32 GEMM: FFMA instructions on the
CUDA cores, ~51 TFLOP/s on an H100 however well tiled. TF32 is switched off inside run()
on every call and restored after (`cublas_tf32(False)`), because the other sides of the pair
run in this process and the flag is process-wide: this side does not depend on what another
side, or torch's default, leaves behind.
"""
from __future__ import annotations

import torch

from ch09._compute_bound_common import FLOPS, K, M, N, ComputeBoundBench, cublas_tf32
from core.benchmark import Workload


class Fp32Matmul(ComputeBoundBench):
    def run(self, a: torch.Tensor) -> torch.Tensor:
        with cublas_tf32(False):  # true fp32 math: FFMA, not TF32 tensor cores
            return torch.matmul(a, self.b)

    def workload(self) -> Workload:
        return Workload(bytes=4 * (M * K + K * N + M * N), flops=FLOPS, flops_dtype="fp32")


get_benchmark = Fp32Matmul

if __name__ == "__main__":
    from core.single import main
    main(Fp32Matmul)
