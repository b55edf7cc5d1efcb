"""HONEST twin of cache_attr: a workspace attribute that run() writes on every call
(v1 flagged this as 'modified its inputs')."""
import torch

from ._planted_common import Planted, size

EXPECT = "pass"


class Workspace(Planted):
    def setup(self, ctx):
        self.out = torch.empty(size(ctx.device), device=ctx.device)

    def run(self, inputs):
        x, y = inputs
        torch.mul(torch.sin(x), y, out=self.out)
        return self.out.add_(x)


get_benchmark = Workspace
