"""CHEAT: stored as gated at 3.0x, it declares a negative result to escape the gate. Declarations are stored with the entry (core.declarations): a run declaring otherwise fails the gate as 'rules changed'."""
from ._planted_common import Planted

EXPECT = "gate: rules changed"
TWIN = "optimized_planted_stored_negative"  # its honest twin
STORED = {"speedup": 3.0, "declarations": {}}  # its entry in the chapter's expectations file (tests/test_planted.py)


class DeclaresNegative(Planted):
    negative_result = "slower here by design"


get_benchmark = DeclaresNegative
