"""Honest baseline of the planted `torch_op_patch` pair (see README.md)."""
from ._planted_common import Planted

EXPECT = "pass"
get_benchmark = Planted
