"""HONEST twin of the graph cheats: the same chain with in-place multiplies (no new output
tensors), captured and replayed like the baseline."""
import torch

from .baseline_graph import GraphTimed

EXPECT = "pass"


class InPlaceMultiplies(GraphTimed):
    def compute(self, x, y):
        for _ in range(4):
            x = torch.sin(x).mul_(y)
        return x


get_benchmark = InPlaceMultiplies
