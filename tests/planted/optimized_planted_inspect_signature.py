"""HONEST twin of frame_reader: uses `inspect` for what honest code uses it for (a
function's signature), never for frames."""
import inspect

from ._planted_common import Planted

EXPECT = "pass"


class Introspective(Planted):
    def setup(self, ctx):
        self.arity = len(inspect.signature(self.compute).parameters)

    def run(self, inputs):
        return self.compute(*inputs[: self.arity])


get_benchmark = Introspective
