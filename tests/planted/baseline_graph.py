"""Honest baseline of the graph-timed pairs (GPU only): the launch-bound chain of small
kernels, declared `timing_mode = "graph"` so its samples are GPU time, not host launches."""
from ._planted_common import LaunchBound

EXPECT = "pass"


class GraphTimed(LaunchBound):
    timing_mode = "graph"


get_benchmark = GraphTimed
