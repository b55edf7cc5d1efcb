"""CHEAT: computes half the elements and declares a tolerance wide enough to hide it
(atol=5 against outputs of RMS ~1.2). A declared tolerance is bounded by the scale of the
expected output (core.verify.tolerance_problem)."""
import torch

from core.benchmark import Tolerance

from ._planted_common import Planted

EXPECT = "the declared atol"
TWIN = "optimized_planted_precision_bf16"  # its honest twin


class HalfTheWork(Planted):
    tolerance = Tolerance(rtol=0.0, atol=5.0)

    def run(self, inputs):
        x, y = inputs
        half = x.numel() // 2
        out = torch.zeros_like(x)
        out[:half] = self.compute(x[:half], y[:half])
        return out


get_benchmark = HalfTheWork
