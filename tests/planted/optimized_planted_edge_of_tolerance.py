"""CHEAT: every element off by just under its declared tolerance (a cheaper approximation
that is wrong everywhere, but never by enough to fail elementwise). The relative RMS error
against the baseline must stay within the tolerance at the output's scale (core.verify)."""
import torch

from core.benchmark import Tolerance

from ._planted_common import Planted

EXPECT = "relative RMS error"
TWIN = "optimized_planted_precision_bf16"  # its honest twin
TOL = Tolerance(rtol=0.05, atol=0.3)


class OffEverywhere(Planted):
    tolerance = TOL

    def run(self, inputs):
        exact = self.compute(*inputs)
        return exact + 0.98 * (TOL.atol + TOL.rtol * exact.abs()) * torch.sign(exact)


get_benchmark = OffEverywhere
