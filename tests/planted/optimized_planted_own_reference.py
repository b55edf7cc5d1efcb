"""CHEAT: brings its own reference() that agrees with its own (wrong) answer. The reference
is the pair's (core.rules): a variant never judges itself."""
from ._planted_common import Planted

EXPECT = "defines its own reference()"
TWIN = "optimized_planted_workspace"  # its honest twin


class SelfJudged(Planted):
    def run(self, inputs):
        x, y = inputs
        return x * y  # not the pair's function

    def reference(self, inputs):
        x, y = inputs
        return (x * y).double()


get_benchmark = SelfJudged
