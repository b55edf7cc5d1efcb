"""Horner's rule: one long chain of dependent FMAs per thread."""
import torch

from ch06._ilp_common import K, N, PolynomialBench


class OneChainHorner(PolynomialBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_horner_one_chain(self.coef, K, self.xs, self.ys, N)
        return self.ys


def get_benchmark() -> OneChainHorner:
    return OneChainHorner()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
