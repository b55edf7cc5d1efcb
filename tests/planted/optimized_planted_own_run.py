"""HONEST twin of rewrite_baseline: overrides run() in its own subclass, leaving the shared
base class (and so the baseline) as it was."""
from ._planted_common import Planted

EXPECT = "pass"


class OwnRun(Planted):
    def run(self, inputs):
        x, y = inputs
        return self.compute(x, y)


get_benchmark = OwnRun
