"""CHEAT: declares `stateful` (which once took a side's timed outputs out of the check) and
computes only the first call after each setup(), where verification looks; later calls
return that answer again. Stateful sides' timed outputs are checked: some rounds start them
from a fresh setup() and keep an output within their first calls (core.child)."""
from ._planted_common import Planted

EXPECT = "the timed output differs"
TWIN = "optimized_planted_stateful_step"  # its honest twin


class FirstCallOnly(Planted):
    stateful = True

    def setup(self, ctx):
        self.answer = None

    def run(self, inputs):
        if self.answer is None:
            self.answer = self.compute(*inputs)
        return self.answer.clone()


get_benchmark = FirstCallOnly
