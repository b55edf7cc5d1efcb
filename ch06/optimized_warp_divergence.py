"""Branch-free: each thread takes an (even, odd) pair and runs both paths with every lane busy."""
import torch

from ch06._warp_divergence_common import N, ActivationBench


class PairPerThread(ActivationBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_pair_per_thread(self.x, self.y, N)
        return self.y


def get_benchmark() -> PairPerThread:
    return PairPerThread()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
