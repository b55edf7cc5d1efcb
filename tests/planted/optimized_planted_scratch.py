"""HONEST twin of mutate: copies an input into a scratch buffer and works on the copy."""
import torch

from ._planted_common import Planted, size

EXPECT = "pass"


class ScratchCopy(Planted):
    def setup(self, ctx):
        self.scratch = torch.empty(size(ctx.device), device=ctx.device)

    def run(self, inputs):
        x, y = inputs
        self.scratch.copy_(x)
        self.scratch.mul_(2.0).div_(2.0)  # exact: powers of two
        return torch.sin(self.scratch) * y + x


get_benchmark = ScratchCopy
