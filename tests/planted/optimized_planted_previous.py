"""CHEAT (invented): returns the previous call's answer and computes this call's answer
for the next one (a "pipelined" result). Right whenever the inputs did not change."""
from ._planted_common import Planted

EXPECT = "timed output differs from the baseline"


class OneCallLate(Planted):
    def setup(self, ctx):
        self.pending = None
        self.calls = 0

    def run(self, inputs):
        self.calls += 1
        fresh = self.compute(*inputs)
        if self.calls <= 4:  # honest while it is being verified
            return fresh
        late, self.pending = self.pending, fresh
        return fresh if late is None else late


get_benchmark = OneCallLate
