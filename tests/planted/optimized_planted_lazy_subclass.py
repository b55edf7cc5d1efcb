"""CHEAT (invented): returns a torch.Tensor subclass. A lazy one (holding the inputs and
computing only when a torch function reads it) would make every timed call the harness never
reads free; this one computes honestly, and is refused for its type whatever it does."""
import torch

from ._planted_common import Planted

EXPECT = "torch.Tensor subclass"
TWIN = "optimized_planted_parameter_output"  # its honest twin


class Deferred(torch.Tensor):
    """Stands for a lazy tensor."""


class LazyOutput(Planted):
    def run(self, inputs):
        return self.compute(*inputs).as_subclass(Deferred)


get_benchmark = LazyOutput
