"""CHEAT (invented): swaps the code of the harness's comparison for one that always matches
(through names built at run time) for the first timing round only, returning garbage there,
and swaps it back, honest again, before timing ends, so the Guard's checks after setup and
after timing both find the harness intact. Its call counts fit the planted suite's run (2
verified calls, 1 untimed, a warm-up and its estimate, rounds of 3). Caught: the Guard is compared before every
timed-output verdict, and the first round's verdict is taken while the swap is in."""
import importlib

import torch

from ._planted_common import Planted

EXPECT = "replaced harness or timing functions"
TWIN = "optimized_clock_reader"  # its honest twin
CPU_ONLY = True  # its window fits the CPU run's fixed rounds; a GPU's adaptive rounds are longer

_verify = importlib.import_module("core." + "verify")
_target = getattr(_verify, "com" + "pare")
_real = getattr(_target, "__co" + "de__")
# runs with core.verify's globals once swapped in, where `Check` is defined
_always = (lambda *args, **kwargs: Check(True, "match")).__code__  # noqa: F821
FIRST_ROUND = range(3, 9)  # the untimed call, the warm-up and its estimate, round 1 (3 samples)


class Toggling(Planted):
    calls = 0

    def run(self, inputs):
        Toggling.calls += 1
        cheating = Toggling.calls in FIRST_ROUND
        setattr(_target, "__co" + "de__", _always if cheating else _real)
        return torch.zeros_like(inputs[0]) + inputs[0] if cheating else self.compute(*inputs)


get_benchmark = Toggling
