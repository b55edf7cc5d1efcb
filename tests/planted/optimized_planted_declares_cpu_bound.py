"""CHEAT: declares host-bound work to widen its gate's tolerance from 10% to 25%. Its stored declarations say otherwise."""
from ._planted_common import Planted

EXPECT = "gate: rules changed"
TWIN = "optimized_planted_stored_cpu_bound"  # its honest twin
STORED = {"speedup": 3.0, "declarations": {}}  # its entry in the chapter's expectations file (tests/test_planted.py)


class DeclaresCpuBound(Planted):
    cpu_bound = "the host, supposedly"


get_benchmark = DeclaresCpuBound
