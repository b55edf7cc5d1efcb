"""HONEST twin of setup_answer: setup() prepares a *weight* (a constant scale folded in
advance, as a deployed model would), never anything that depends on the call's inputs."""
import torch

from ._planted_common import Planted

EXPECT = "pass"


class WeightsFromSetup(Planted):
    def setup(self, ctx):
        self.two = torch.tensor(2.0, device=ctx.device)

    def run(self, inputs):
        x, y = inputs
        return torch.sin(x) * (y * self.two) / self.two + x


get_benchmark = WeightsFromSetup
