"""CHEAT: stored as gated on its speedup at 3.0x, it now declares goal memory (nothing stored of that goal: 'new', never a regression). Its stored declarations say speed."""
from ._planted_common import Planted

EXPECT = "gate: rules changed"
TWIN = "optimized_planted_stored_memory_goal"  # its honest twin
STORED = {"speedup": 3.0, "declarations": {}}  # its entry in the chapter's expectations file (tests/test_planted.py)


class DeclaresMemoryGoal(Planted):
    goal = "memory"


get_benchmark = DeclaresMemoryGoal
