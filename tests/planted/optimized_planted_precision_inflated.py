"""CHEAT: declares a precision change, which lets a variant count its own workload, and uses
it to count more bytes than the pair's work moves. A variant's own workload is bounded by
the baseline's (core.rules.workload_problem)."""
from core.benchmark import Workload

from ._planted_common import Planted, size

EXPECT = "counts more bytes"
TWIN = "optimized_planted_precision_bf16"  # its honest twin


class InflatedBytes(Planted):
    precision = "fp32 (nothing narrower: the declaration is a pretext)"

    def workload(self) -> Workload:
        return Workload(bytes=4 * 3 * size(self.device) * 4)


get_benchmark = InflatedBytes
