"""HONEST twin of previous: alternates between two output buffers, each written by the
call that returns it."""
import torch

from ._planted_common import Planted, size

EXPECT = "pass"


class DoubleBuffered(Planted):
    def setup(self, ctx):
        self.buffers = [torch.empty(size(ctx.device), device=ctx.device) for _ in range(2)]
        self.calls = 0

    def run(self, inputs):
        x, y = inputs
        self.calls += 1
        out = self.buffers[self.calls % 2]
        torch.mul(torch.sin(x), y, out=out)
        return out.add_(x)


get_benchmark = DoubleBuffered
