"""HONEST twin of declares_cpu_bound: host-bound work declared and stored as such."""
from ._planted_common import Planted

EXPECT = "pass"
STORED = {"speedup": 1.0, "cpu_bound": "the host", "declarations": {"cpu_bound": "the host"}}


class StoredCpuBound(Planted):
    cpu_bound = "the host"


get_benchmark = StoredCpuBound
