"""HONEST twin of stateful_skip: a stateful side (it counts its steps since setup(), as a
training step advances an optimizer) that computes every call."""
from ._planted_common import Planted

EXPECT = "pass"


class CountsSteps(Planted):
    stateful = True

    def setup(self, ctx):
        self.steps = 0

    def run(self, inputs):
        self.steps += 1
        return self.compute(*inputs)


get_benchmark = CountsSteps
