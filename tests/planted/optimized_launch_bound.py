"""HONEST twin of the stream cheats: launch-bound, all work on the caller's stream, with
fused multiply-adds (fewer launches)."""
import torch

from ._planted_common import LaunchBound

EXPECT = "pass"


class FewerLaunches(LaunchBound):
    def compute(self, x, y):
        for _ in range(4):
            x = torch.mul(torch.sin(x), y)
        return x


get_benchmark = FewerLaunches
