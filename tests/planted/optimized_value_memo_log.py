"""HONEST twin of value_memo: builds the same key from eight sampled values of each input and
keeps the last answer under it (a debugging log), but computes every call."""
from .baseline_value_memo import Repeated

EXPECT = "pass"


class SampledLog(Repeated):
    def setup(self, ctx):
        self.log = {}

    def run(self, inputs):
        key = tuple(tuple(t[:8].tolist()) for t in inputs)
        out = self.compute(*inputs)
        self.log = {key: out}
        return out


get_benchmark = SampledLog
