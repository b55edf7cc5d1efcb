"""One thread per element, branching on i % 2: every warp runs both paths, half its lanes idle."""
import torch

from ch06._warp_divergence_common import N, ActivationBench


class ParityBranch(ActivationBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.lib.launch_parity_branch(x, self.y, N)
        return self.y


get_benchmark = ParityBranch

if __name__ == "__main__":
    from core.single import main
    main(ParityBranch)
