"""Baseline: a first Triton matmul, 64 x 64 x 32 tiles in row-major program order.

What the Triton docs' basic pattern gives before any tuning: each program computes one
64 x 64 tile of C with `tl.dot` (so it does run on the tensor cores), with Triton's default
4 warps and 3 pipeline stages. Small tiles mean little reuse: every 64 x 32 slice of A and
32 x 64 slice of B loaded into shared memory feeds only 64 x 64 x 32 multiply-adds, and in
row-major order the programs running together touch all of B, which does not stay in L2.
"""
from __future__ import annotations

import torch

from ch09._triton_matmul_common import MatmulBench


class NaiveTritonMatmul(MatmulBench):
    def prepare(self) -> None:
        from ch09._triton_matmul_kernels import matmul_naive  # lazy: needs triton

        self.matmul = matmul_naive
        warmup = self.make_inputs(self.ctx.seed)  # throwaway data of the real shape
        self.matmul(warmup, self.b, self.c)  # JIT-compile in setup, not in the timed run
        self.c.fill_(float("nan"))

    def run(self, a: torch.Tensor) -> torch.Tensor:
        return self.matmul(a, self.b, self.c)


get_benchmark = NaiveTritonMatmul

if __name__ == "__main__":
    from core.single import main
    main(NaiveTritonMatmul)
