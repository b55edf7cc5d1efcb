"""Honest baseline of the planted `hang` pair (see README.md)."""
from ._planted_common import Planted

EXPECT = "pass"
get_benchmark = Planted
TIMEOUT_S = 8  # the optimized side hangs within a second of its start; do not wait 10 minutes
