"""HONEST twin of the declares_* cheats: its negative result is stored with its entry, so the gate reports it as declared."""
from ._planted_common import Planted

EXPECT = "pass"
STORED = {"speedup": 0.9, "declarations": {"negative_result": "slower here by design"}}  # its entry in the chapter's expectations file (tests/test_planted.py)


class StoredNegative(Planted):
    negative_result = "slower here by design"


get_benchmark = StoredNegative
