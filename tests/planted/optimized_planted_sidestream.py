"""PLANTED CHEAT: the work runs on a side stream that the timing events never see."""
import torch

from core.benchmark import BenchContext, Benchmark
from ._planted_common import PlantedWork  # copied next to it into a chapter package


class SideStream(PlantedWork):
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.side = torch.cuda.Stream()

    def run(self) -> torch.Tensor:
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            return self.compute()  # never joined back: the caller's stream sees no work


def get_benchmark() -> Benchmark:
    return SideStream()
