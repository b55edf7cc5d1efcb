"""Honest, launch-bound (GPU only): the escape check must pass it."""
from ._planted_common import LaunchBound

EXPECT = "pass"
get_benchmark = LaunchBound
