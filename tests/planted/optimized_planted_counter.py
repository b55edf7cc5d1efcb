"""HONEST twin of skip_timed: counts its calls (for logging, say) and computes every one."""
from ._planted_common import Planted

EXPECT = "pass"


class CountingCalls(Planted):
    def setup(self, ctx):
        self.calls = 0

    def run(self, inputs):
        self.calls += 1
        return self.compute(*inputs)


get_benchmark = CountingCalls
