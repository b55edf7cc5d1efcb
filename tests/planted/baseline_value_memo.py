"""Honest baseline of the planted `value_memo` pair: the planted computation repeated 20 times
(work worth skipping, so a cache that hit would show as a speedup)."""
import torch

from ._planted_common import Planted

EXPECT = "pass"


class Repeated(Planted):
    passes = 20

    def compute(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        for _ in range(self.passes):
            x = torch.sin(x) * y + 0.5
        return x


get_benchmark = Repeated
