"""Branch-free: each thread takes an (even, odd) pair and runs both paths with every lane busy."""
import torch

from ch06._warp_divergence_common import N, ActivationBench


class PairPerThread(ActivationBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.lib.launch_pair_per_thread(x, self.y, N)
        return self.y


get_benchmark = PairPerThread

if __name__ == "__main__":
    from core.single import main
    main(PairPerThread)
