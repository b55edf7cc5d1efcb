"""Naive matmul: one thread per output, every operand read from global memory (via caches)."""
import torch

from ch07._matmul_common import K, M, N, MatmulBench


class NaiveMatmul(MatmulBench):
    def run(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        a, b = inputs
        self.lib.launch_matmul_naive(a, b, self.c, M, N, K)
        return self.c


get_benchmark = NaiveMatmul

if __name__ == "__main__":
    from core.single import main
    main(NaiveMatmul)
