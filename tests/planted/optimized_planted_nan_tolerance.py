"""CHEAT (found by an adversarial audit, 2026-11-28): half the work, behind a NaN tolerance.
Every comparison with NaN is False, so "rtol above the bound", "atol above the RMS bound" and
"error above the band" were all False too: the tolerance bounds passed it, and so did the
comparison. Read through a property that answers None until setup() has run, so the
declarations stored with the entry show no tolerance at all."""
from core.benchmark import Tolerance

from ._planted_common import Planted

EXPECT = "tolerance|declares"
TWIN = "optimized_planted_precision_bf16"  # its honest twin: a finite tolerance it states


class NanTolerance(Planted):
    @property
    def tolerance(self):
        return Tolerance(float("nan"), float("nan")) if getattr(self, "armed", False) else None

    def setup(self, ctx):
        self.armed = True

    @staticmethod
    def compute(x, y):
        return x * y + x  # sin() skipped


get_benchmark = NanTolerance
