"""CHEAT (invented): returns garbage and swaps the code of the harness's comparison for one
that always matches, through names built at run time (which the static check of pair sources
cannot read). Caught when it runs: the Guard compares every harness function's code object
with its snapshot."""
import importlib

import torch

from ._planted_common import Planted

EXPECT = "replaced harness or timing functions"
TWIN = "optimized_clock_reader"  # its honest twin

_verify = importlib.import_module("core." + "verify")
_always = (lambda *args, **kwargs: _verify.Check(True, "match"))
_target = getattr(_verify, "com" + "pare")
setattr(_target, "__co" + "de__", _always.__code__)


class Garbage(Planted):
    def run(self, inputs):
        return torch.zeros_like(inputs[0]) + inputs[0]


get_benchmark = Garbage
