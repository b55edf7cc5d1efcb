"""CHEAT (invented): rewrites the shared base class at import so that the baseline, which
runs Planted.run, does its work four times; this variant keeps the original. Caught: after
the baseline is imported, the Guard watches the pair's own modules and the baseline's
classes, and nothing a variant imports may change them."""
from ._planted_common import Planted

EXPECT = "replaced harness or timing functions"
TWIN = "optimized_planted_own_run"  # its honest twin

_honest_run = Planted.run


def _four_times(self, inputs):
    for _ in range(3):
        _honest_run(self, inputs)
    return _honest_run(self, inputs)


Planted.run = _four_times


class Original(Planted):
    def run(self, inputs):
        return _honest_run(self, inputs)


get_benchmark = Original
