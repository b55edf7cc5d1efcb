"""Four independent Horner chains in x⁴ per thread, combined with three FMAs at the end."""
import torch

from ch06._ilp_common import K, N, PolynomialBench


class FourChainHorner(PolynomialBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_horner_four_chains(self.coef, K, self.xs, self.ys, N)
        return self.ys


def get_benchmark() -> FourChainHorner:
    return FourChainHorner()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
