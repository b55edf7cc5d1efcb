"""Honest baseline of the planted side-stream pairs (GPU only): 20 elementwise passes."""
from ._planted_common import Streamed

EXPECT = "pass"
get_benchmark = Streamed
