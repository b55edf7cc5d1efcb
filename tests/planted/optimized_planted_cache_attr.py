"""CHEAT (issue class: cache reset by setup): the first answer is kept in an attribute and
returned on every later call. v1 reset it by calling setup() before each re-verification."""
from ._planted_common import Planted

EXPECT = "timed output differs from the baseline|verification failed on seed"  # on a GPU the memory goal's extra calls use up its honest window first


class CacheInAttribute(Planted):
    def setup(self, ctx):
        self.answer, self.calls = None, 0

    def run(self, inputs):
        if self.answer is None or self.calls < 3:  # honest for the verification calls
            self.answer = self.compute(*inputs)
        self.calls += 1
        return self.answer


get_benchmark = CacheInAttribute
