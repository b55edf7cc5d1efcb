"""Optimized: the same fp32 matmul with TF32 tensor-core math allowed, one setting.

`torch.set_float32_matmul_precision("high")` lets cuBLAS round each fp32 input to TF32 (10
stored mantissa bits, fp32's 8-bit exponent) inside the GEMM and run it on the tensor cores,
accumulating in fp32. Same fp32 tensors in, fp32 out, no conversion pass. Set inside run()
and restored after. **Precision change declared**: the inputs' TF32 rounding (at most 2^-11
relative); `tolerance` and its derivation in _cublas_common.py.
"""
import torch

from ch02._cublas_common import TF32_TOLERANCE, CublasBench, matmul_precision
from core.benchmark import Requirements


class Tf32Cublas(CublasBench):
    requires = Requirements(min_compute_capability=(8, 0))  # TF32 tensor cores (Ampere+)
    tolerance = TF32_TOLERANCE
    flops_dtype = "tf32"

    def run(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        a, b = inputs
        with matmul_precision("high"):  # TF32 tensor cores for this call only
            return torch.mm(a, b)


get_benchmark = Tf32Cublas

if __name__ == "__main__":
    from core.single import main
    main(Tf32Cublas)
