"""Variant `cublas_bf16`: convert both matrices to bf16, multiply on the bf16 tensor cores.

Both operands arrive in fp32 with each call, so run() converts both (read 4 bytes, write 2
per element of A and B); that pass is part of the work and is timed. cuBLAS then runs a bf16
GEMM with an fp32 accumulator and writes the accumulator straight out as the fp32 result
(`torch.mm(..., out_dtype=torch.float32)`), so the only precision change is the inputs'
rounding to bf16. No float32 matmul precision is involved: this GEMM has no fp32 operands.
**Precision change declared**: bf16 keeps 8 significant bits (at most 2^-8 relative rounding);
`tolerance` and its derivation in _cublas_common.py.
"""
import torch

from ch02._cublas_common import BF16_TOLERANCE, CublasBench
from core.benchmark import Requirements


class Bf16Cublas(CublasBench):
    requires = Requirements(min_compute_capability=(8, 0))  # bf16 tensor cores (Ampere+)
    tolerance = BF16_TOLERANCE
    flops_dtype = "bf16"

    def run(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        a, b = inputs
        a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)  # converted on every call
        return torch.mm(a16, b16, out_dtype=torch.float32)


get_benchmark = Bf16Cublas

if __name__ == "__main__":
    from core.single import main
    main(Bf16Cublas)
