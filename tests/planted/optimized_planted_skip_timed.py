"""CHEAT (invented): honest for the first calls (verification), then computes only the
first half of the output and leaves the rest as the previous call left it."""
import torch

from ._planted_common import Planted, size

EXPECT = "timed output differs from the baseline"


class LazyAfterVerification(Planted):
    def setup(self, ctx):
        self.out = torch.empty(size(ctx.device), device=ctx.device)
        self.calls = 0

    def run(self, inputs):
        x, y = inputs
        self.calls += 1
        n = x.numel() if self.calls <= 4 else x.numel() // 2
        self.out[:n] = self.compute(x[:n], y[:n])
        return self.out


get_benchmark = LazyAfterVerification
