"""Honest baseline of the planted `thread_pool` pair (see README.md)."""
from ._planted_common import Planted

EXPECT = "pass"
get_benchmark = Planted
