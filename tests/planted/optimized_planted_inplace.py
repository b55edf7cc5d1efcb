"""HONEST twin of alias: writing into the inputs is declared (`inplace = True`), so the
harness hands each call a fresh copy of the inputs, outside the timing."""
import torch

from ._planted_common import Planted

EXPECT = "pass"


class DeclaredInplace(Planted):
    inplace = True

    def run(self, inputs):
        x, y = inputs
        return x.add_(torch.sin(x) * y)


get_benchmark = DeclaredInplace
