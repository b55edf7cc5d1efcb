"""Inputs for the launch_bounds pair: Y = W·X with X 64 x 1M, W 112 x 64 (fp32).

X is 256 MiB and Y 448 MiB. One thread per column keeps 112 accumulators in registers,
which is what makes the kernel register-heavy (see launch_bounds.cu for the ptxas counts).
W is the weights (setup(), from ctx.seed); X is each call's input.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Workload
from core.cuda_pair import CudaPair

K, OUT, N = 64, 112, 1 << 20


class ProjectBench(CudaPair):
    source = "launch_bounds.cu"

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        gen = self.generator(ctx.seed)
        self.wt = self.randn(K, OUT, gen=gen) * K**-0.5  # W stored transposed (k-major)
        self.y = torch.full((OUT, N), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        # X is feature-major: row k holds feature k of every column
        return self.randn(K, N, gen=self.generator(seed))

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        # Both kernels share launch_bounds.cu's code: check it against float64 torch.
        return self.wt.double().T @ x.double()

    def workload(self) -> Workload:
        return Workload(bytes=4 * (K * N + OUT * N + K * OUT), flops=2 * OUT * K * N,
                        flops_dtype="fp32")
