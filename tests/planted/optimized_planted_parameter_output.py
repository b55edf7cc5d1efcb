"""HONEST twin of lazy_subclass: writes its answer into an nn.Parameter made in setup() (a
plain tensor type the harness accepts) and returns it."""
import torch

from ._planted_common import Planted, size

EXPECT = "pass"


class ParameterOutput(Planted):
    def setup(self, ctx):
        self.out = torch.nn.Parameter(torch.empty(size(ctx.device), device=ctx.device),
                                      requires_grad=False)

    def run(self, inputs):
        x, y = inputs
        torch.mul(torch.sin(x), y, out=self.out)
        return self.out.add_(x)


get_benchmark = ParameterOutput
