"""CHEAT (issue class: cache keyed on the input tensors' identity): functools.lru_cache
over the tensors (their hash is their id). Refilled inputs keep their identity."""
import functools

from ._planted_common import Planted

EXPECT = "timed output differs from the baseline"


@functools.lru_cache(maxsize=8)
def cached(x, y):
    return Planted.compute(x, y)


class LruOverTensors(Planted):
    def run(self, inputs):
        return cached(*inputs)


get_benchmark = LruOverTensors
