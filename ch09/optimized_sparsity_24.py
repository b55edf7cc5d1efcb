"""Optimized: the same product with W compressed to 2:4 semi-structured sparse form.

setup() compresses the pruned W (torch.sparse semi-structured tensor: the 2 kept values of
every 4, half the bytes, plus 2-bit indices) with cuSPARSELt when this torch build has it,
else CUTLASS. run() is `torch.mm(w_sparse, x)`: the sparse tensor-core instructions read
only the kept values and select the matching rows of X with the metadata, so the math
units do half the multiply-adds of the dense product.

Support is known only at run time (it depends on the torch build, the GPU and the shape):
if compression fails, setup() raises a RuntimeError saying why, the harness reports this
side as failed with that message, and the dense baseline is still measured.
"""
from __future__ import annotations

import torch

from ch09._sparsity_24_common import K, M, N, Sparsity24Bench
from core.benchmark import Workload


def compress(w: torch.Tensor) -> torch.Tensor:
    """The 2:4 semi-structured form of an already pruned w (cuSPARSELt, else CUTLASS)."""
    from torch.sparse import (SparseSemiStructuredTensorCUSPARSELT,
                              SparseSemiStructuredTensorCUTLASS)

    cusparselt = torch.backends.cusparselt.is_available()
    backend = (SparseSemiStructuredTensorCUSPARSELT if cusparselt
               else SparseSemiStructuredTensorCUTLASS)
    try:
        return backend.from_dense(w)
    except Exception as exc:  # noqa: BLE001 - any failure means: not supported here
        raise RuntimeError(f"2:4 semi-structured sparsity is not available here "
                           f"({backend.__name__}, torch {torch.__version__}, "
                           f"{tuple(w.shape)} {w.dtype}): {type(exc).__name__}: {exc}") from exc


class SparseMatmul(Sparsity24Bench):
    precision = "2:4 sparse weights (half the values, 2-bit indices)"  # declared: its workload() counts the narrower bytes
    def prepare(self) -> None:
        self.w_sparse = compress(self.w)
        self.backend = type(self.w_sparse).__name__
        del self.w  # this side reads only the compressed weight

    def run(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mm(self.w_sparse, x)

    def workload(self) -> Workload:
        # Kept values (half of W) + 2-bit index per kept value + X + Y. FLOPs: the multiply-adds
        # it does, half the dense product's (counted dense-equivalent, its rate was 103-118% of
        # the dense bf16 ceiling: the sparse tensor cores' roof is twice that).
        w_bytes = (M * K // 2) * 2 + (M * K // 2) // 4
        return Workload(bytes=w_bytes + 2 * (K * N + M * N), flops=M * N * K, flops_dtype="bf16")


get_benchmark = SparseMatmul

if __name__ == "__main__":
    from core.single import main
    main(SparseMatmul)
