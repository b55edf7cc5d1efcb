"""Honest side of a planted pair (see tests/planted/README.md)."""
import torch

from core.benchmark import Benchmark
from ._planted_common import PlantedWork  # copied next to it into a chapter package

TIMEOUT_S = 20  # the optimized side hangs; do not wait the default 10 minutes


class Honest(PlantedWork):
    def run(self) -> torch.Tensor:
        return self.compute()


def get_benchmark() -> Benchmark:
    return Honest()
