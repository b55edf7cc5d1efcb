"""CHEAT (invented): a cache keyed on the inputs' device addresses, not their identity.
Fresh copies get new addresses (so verification passes), refills keep them."""
from ._planted_common import Planted

EXPECT = "timed output differs from the baseline"


class AddressCache(Planted):
    def setup(self, ctx):
        self.cache = {}

    def run(self, inputs):
        key = tuple(t.data_ptr() for t in inputs)
        if key not in self.cache:
            self.cache[key] = self.compute(*inputs)
        return self.cache[key]


get_benchmark = AddressCache
