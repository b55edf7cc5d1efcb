"""Honest baseline of the planted `hang` pair (see README.md)."""
from ._planted_common import Planted

EXPECT = "pass"
get_benchmark = Planted
TIMEOUT_S = 15  # the optimized side hangs; do not wait the default 10 minutes
