"""HONEST twin of declares_memory_goal: a memory variant stored with its goal (on a CPU the
memory goal reports "new": device memory is measured on CUDA only)."""
from ._planted_common import Planted

EXPECT = "pass"
STORED = {"speedup": 1.0, "goal": "memory", "memory_ratio": 1.0, "declarations": {"goal": "memory"}}


class StoredMemoryGoal(Planted):
    goal = "memory"


get_benchmark = StoredMemoryGoal
