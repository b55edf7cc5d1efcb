"""CHEAT (found by an adversarial audit, 2026-11-28): declares nothing when loaded (so nothing
is stored with its entry), then sets `stateful` on the instance in setup(); a stateful side's
timed outputs are only checked from a fresh setup(), in a few rounds, so after its first
calls it returns zeros."""
import torch

from ._planted_common import Planted

EXPECT = "sets its declaration `stateful` on the instance"
TWIN = "optimized_planted_stateful_step"  # its honest twin: declares stateful in its class


class StatefulLater(Planted):
    def setup(self, ctx):
        self.stateful = True
        self.steps = 0

    def run(self, inputs):
        self.steps += 1
        return self.compute(*inputs) if self.steps <= 4 else torch.zeros_like(inputs[0])


get_benchmark = StatefulLater
