"""HONEST twin of forge: writes a scratch file of its own (a cache of a tuned config, say)
and carries on."""
import tempfile

from ._planted_common import Planted

EXPECT = "pass"


class WritesScratch(Planted):
    def setup(self, ctx):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=True) as handle:
            handle.write('{"block": 256}')

    def run(self, inputs):
        return self.compute(*inputs)


get_benchmark = WritesScratch
