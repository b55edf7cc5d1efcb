"""CHEAT: honest work, but its own workload() counts 4x the bytes, so its GB/s and % of the
ceiling are 4x too high. The workload is the pair's (core.rules)."""
from core.benchmark import Workload

from ._planted_common import Planted, size

EXPECT = "defines its own workload()"
TWIN = "optimized_planted_precision_bf16"  # its honest twin


class FourTimesTheBytes(Planted):
    def workload(self) -> Workload:
        return Workload(bytes=4 * 3 * size(self.device) * 4)


get_benchmark = FourTimesTheBytes
