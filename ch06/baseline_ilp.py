"""Horner's rule: one long chain of dependent FMAs per thread."""
import torch

from ch06._ilp_common import K, N, PolynomialBench


class OneChainHorner(PolynomialBench):
    def run(self, xs: torch.Tensor) -> torch.Tensor:
        self.lib.launch_horner_one_chain(self.coef, K, xs, self.ys, N)
        return self.ys


get_benchmark = OneChainHorner

if __name__ == "__main__":
    from core.single import main
    main(OneChainHorner)
