"""Naive matmul: one thread per output, every operand read from global memory (via caches)."""
import torch

from ch07._matmul_common import K, M, N, MatmulBench


class NaiveMatmul(MatmulBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_matmul_naive(self.a, self.b, self.c, M, N, K)
        return self.c


def get_benchmark() -> NaiveMatmul:
    return NaiveMatmul()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
