"""CHEAT: computes half the elements and declares atol=1, within the bound for outputs of
RMS ~1.2 (the issue's case: half the rows, atol=1). The missing half fails elementwise where
its values exceed 1, and the relative RMS error (0.71) is above any tolerance's share."""
import torch

from core.benchmark import Tolerance

from ._planted_common import Planted

EXPECT = "differ beyond|relative RMS error"
TWIN = "optimized_planted_precision_bf16"  # its honest twin


class HalfWithinTolerance(Planted):
    tolerance = Tolerance(rtol=0.0, atol=1.0)

    def run(self, inputs):
        x, y = inputs
        half = x.numel() // 2
        out = torch.zeros_like(x)
        out[:half] = self.compute(x[:half], y[:half])
        return out


get_benchmark = HalfWithinTolerance
