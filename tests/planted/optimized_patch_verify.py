"""CHEAT (invented): returns garbage and replaces the harness's comparison so that any
output "matches"."""
import torch

import core.verify
from ._planted_common import Planted

EXPECT = "refused before running"

core.verify.compare = lambda *args, **kwargs: core.verify.Check(True, "match")


class Garbage(Planted):
    def run(self, inputs):
        return torch.zeros_like(inputs[0]) + inputs[0]


get_benchmark = Garbage
