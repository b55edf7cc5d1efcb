"""CHEAT: changes an input it does not return (scales y down), so later calls see
different, easier data."""
import torch

from ._planted_common import Planted

EXPECT = "modified its inputs"


class MutatesInput(Planted):
    def run(self, inputs):
        x, y = inputs
        out = torch.sin(x) * y + x
        y.mul_(0.5)
        return out


get_benchmark = MutatesInput
