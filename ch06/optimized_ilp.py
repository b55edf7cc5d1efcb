"""Four independent Horner chains in x⁴ per thread, combined with three FMAs at the end."""
import torch

from ch06._ilp_common import K, N, PolynomialBench


class FourChainHorner(PolynomialBench):
    def run(self, xs: torch.Tensor) -> torch.Tensor:
        self.lib.launch_horner_four_chains(self.coef, K, xs, self.ys, N)
        return self.ys


get_benchmark = FourChainHorner

if __name__ == "__main__":
    from core.single import main
    main(FourChainHorner)
