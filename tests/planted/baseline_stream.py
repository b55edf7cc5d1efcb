"""Honest baseline of the planted side-stream pairs (GPU only): 8 elementwise passes over
16M floats, on the caller's stream."""
from ._planted_common import Streamed

EXPECT = "pass"
get_benchmark = Streamed
