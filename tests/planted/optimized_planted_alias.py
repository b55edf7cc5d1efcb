"""CHEAT (issue class: the output is the input tensor, written in place): each call
transforms x again, so later calls compute on their own output."""
import torch

from ._planted_common import Planted

EXPECT = "returned its input"


class ReturnsInput(Planted):
    def run(self, inputs):
        x, y = inputs
        return x.add_(torch.sin(x) * y)


get_benchmark = ReturnsInput
