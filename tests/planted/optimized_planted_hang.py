"""PLANTED HANG: run() never returns; the runner must kill the pair and carry on."""
import time

import torch

from core.benchmark import Benchmark
from ._planted_common import PlantedWork  # copied next to it into a chapter package


class Hang(PlantedWork):
    def run(self) -> torch.Tensor:
        while True:
            time.sleep(0.5)


def get_benchmark() -> Benchmark:
    return Hang()
