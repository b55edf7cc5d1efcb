"""Honest baseline of the planted `patch_toggle` pair (see README.md)."""
from ._planted_common import Planted

EXPECT = "pass"
get_benchmark = Planted
