"""Shared work for the planted pairs: 20 elementwise passes over 64 MiB (~1 ms on a GPU)."""
import torch

from core.benchmark import BenchContext, Benchmark, Workload

N, PASSES = 1 << 24, 20


class PlantedWork(Benchmark):
    def setup(self, ctx: BenchContext) -> None:
        gen = torch.Generator(device=ctx.device).manual_seed(ctx.seed)
        self.x = torch.randn(N, generator=gen, device=ctx.device)

    def compute(self) -> torch.Tensor:
        y = self.x
        for _ in range(PASSES):
            y = torch.sin(y) * 1.0001 + 0.5
        return y

    def workload(self) -> Workload:
        return Workload(bytes=2 * PASSES * N * 4)
