"""Honest baseline of the planted `token_reader` pair (see README.md)."""
from ._planted_common import Planted

EXPECT = "pass"
get_benchmark = Planted
