"""Baseline: an fp32 matmul as torch runs it by default, every bit kept: CUDA-core FFMA.

`torch.mm` on two fp32 matrices with the float32 matmul precision at "highest" (torch's
default): cuBLAS runs an SGEMM on the CUDA cores. The level is set inside run() and restored
after, because the other sides of the pair run in this process.
"""
import torch

from ch02._cublas_common import CublasBench, matmul_precision


class Fp32Cublas(CublasBench):
    def run(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        a, b = inputs
        with matmul_precision("highest"):  # true fp32: no TF32 rounding, no tensor cores
            return torch.mm(a, b)


get_benchmark = Fp32Cublas

if __name__ == "__main__":
    from core.single import main
    main(Fp32Cublas)
