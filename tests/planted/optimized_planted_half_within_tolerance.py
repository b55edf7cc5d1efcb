"""CHEAT: computes half the elements and declares atol=1, within the bound for outputs of
RMS ~1.2 (the issue's case: half the rows, atol=1). The missing half fails elementwise where
its values exceed 1, and the relative RMS error (0.71) is above any tolerance's share."""
from core.benchmark import Tolerance

from .optimized_planted_own_tolerance import HalfTheWork

EXPECT = "differ beyond|relative RMS error"
TWIN = "optimized_planted_precision_bf16"  # its honest twin


class HalfWithinTolerance(HalfTheWork):
    tolerance = Tolerance(rtol=0.0, atol=1.0)


get_benchmark = HalfWithinTolerance
