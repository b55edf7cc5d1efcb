"""Honest baseline of the planted `gil_hog` pair (see README.md)."""
from ._planted_common import Planted

EXPECT = "pass"
get_benchmark = Planted
