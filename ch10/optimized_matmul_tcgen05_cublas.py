"""Reference point (Blackwell only): the same product through torch.matmul, cuBLAS's sm_100 kernels.

Not a hand-written kernel: it is here so the report prints the two Triton kernels against the
vendor library on the same GPU and inputs (divide a kernel's speedup by this one for its share
of cuBLAS). On Hopper the row SKIPs; ch09 `triton_matmul_cublas` is the same comparison there.
"""
from __future__ import annotations

import torch

from ch10._matmul_tcgen05_common import Tcgen05MatmulBench


class CublasMatmul(Tcgen05MatmulBench):
    def prepare(self) -> None:
        """Nothing to compile."""

    def run(self, a: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, self.b)


get_benchmark = CublasMatmul

if __name__ == "__main__":
    from core.single import main
    main(CublasMatmul)
