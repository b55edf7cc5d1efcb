"""Honest baseline of the planted `unlisted_thread` pair (see README.md)."""
from ._planted_common import Planted

EXPECT = "pass"
get_benchmark = Planted
