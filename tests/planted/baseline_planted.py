"""The honest baseline every in-process planted variant is compared with."""
from ._planted_common import Planted

EXPECT = "pass"
get_benchmark = Planted
