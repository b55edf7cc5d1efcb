"""Shared by the `graph_conditional` pair: Jacobi iterations until the residual is small.

The system A x = b is tridiagonal, A = tridiag(-1, 2.2, -1), with 2^20 unknowns and a fresh
right-hand side b per call (make_inputs). Jacobi converges at ~0.91 per sweep here; the loop
stops when |b - A x| <= 1e-5 |b| (about 54 iterations of two sweeps each for a random b; the
count depends on b, which is why the loop needs a decision every iteration). Every iteration
is three small kernels (two sweeps over 4 MiB, one one-block check): a few µs of GPU work,
shorter than a host round trip. Both sides run the same kernels from graph_conditional.cu in
the same order, so their answers agree to the bit (tolerance 0).
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Requirements, Tolerance, Workload
from core.cuda_pair import CudaPair

N = 1 << 20
DIAG, TOL, MAX_LOOPS = 2.2, 1e-5, 1000
THREADS = 256  # graph_conditional.cu's block size: one partial sum per block


class ConditionalBench(CudaPair):
    source = "graph_conditional.cu"
    # conditional graph nodes: CUDA 12.4+ (toolkit and driver); the chapter targets Hopper
    requires = Requirements(cuda=True, nvcc=True, min_compute_capability=(9, 0))
    tolerance = Tolerance(rtol=0.0, atol=0.0)
    # float64 Jacobi run to convergence vs the fp32 solve stopped at 1e-5: measured (torch,
    # CPU, same algorithm) max |x - x*| = 1.3e-4 for |x*| up to 8.4
    reference_tolerance = Tolerance(rtol=0.0, atol=2e-3)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        blocks = -(-N // THREADS)
        self.x = torch.full((N,), float("nan"), device=ctx.device)  # the answer (x0)
        self.scratch = torch.empty(N, device=ctx.device)  # x1, between the two sweeps
        self.partials = torch.empty(blocks, device=ctx.device)
        self.state = torch.zeros(4, dtype=torch.int32, device=ctx.device)  # SolverState, 16 bytes

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(N, gen=self.generator(seed))

    def reference(self, b: torch.Tensor) -> torch.Tensor:
        # 400 float64 sweeps: 0.91^400 ~ 1e-17, the exact solution to float64 precision
        b = b.double()
        x = torch.zeros_like(b)
        for _ in range(400):
            neighbours = torch.zeros_like(x)
            neighbours[1:] += x[:-1]
            neighbours[:-1] += x[1:]
            x = (b + neighbours) / DIAG
        return x

    def workload(self) -> Workload:
        return Workload(units=1, unit_name="solves")  # the sweep count depends on b
