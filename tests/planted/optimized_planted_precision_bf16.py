"""HONEST twin of own_tolerance and own_workload: computes in bf16 (a declared precision
change), declares the tolerance that costs, and counts its narrower reads (bf16 copies are
made in run(), so it still reads the fp32 inputs: the same bytes as the baseline)."""
import torch

from core.benchmark import Tolerance, Workload

from ._planted_common import Planted, size

EXPECT = "pass"


class Bf16Math(Planted):
    precision = "bf16 math"
    tolerance = Tolerance(rtol=2e-2, atol=5e-2)  # bf16 rounding where sin(x)*y cancels x

    def run(self, inputs):
        x, y = (t.to(torch.bfloat16) for t in inputs)
        return self.compute(x, y).float()

    def workload(self) -> Workload:
        return Workload(bytes=3 * size(self.device) * 4)


get_benchmark = Bf16Math
