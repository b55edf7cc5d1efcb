"""CHEAT (found by an adversarial audit, 2026-11-28): half the work, with a NaN tolerance as a
plain class attribute. NaN compares False with everything, so every bound on a declared
tolerance and every comparison under it used to pass."""
from core.benchmark import Tolerance

from ._planted_common import Planted

EXPECT = "not two finite, non-negative numbers"
TWIN = "optimized_planted_precision_bf16"  # its honest twin: a finite tolerance it states


class NanTolerance(Planted):
    tolerance = Tolerance(float("nan"), float("nan"))

    @staticmethod
    def compute(x, y):
        return x * y + x  # sin() skipped


get_benchmark = NanTolerance
