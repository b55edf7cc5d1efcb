"""Shared by `pdl`: 32 small dependent kernels, one decode step's chain of per-layer ops.

The activation is [8, 4096] fp32 (a decode batch of 8, 128 KiB); each of 32 layers applies
out = tanh(in · scale_k + bias_k) with its own parameters (set up once, from the weights'
seed). Each kernel waits for the one before, so nothing can run side by side: what is left to
win is the gap between two kernels, which for kernels of a couple of µs is as long as the
work. Both sides launch the same kernel from pdl.cu; the optimized side adds the PDL launch
attribute, so the outputs are bit-identical.

The chain's GPU time (~50 µs) is shorter than its launch from the host, so the pair is timed
by CUDA-graph replay (`timing_mode = "graph"`), as a decode step is in serving engines; graph
capture keeps PDL's programmatic edges between the captured kernels.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Requirements, Tolerance, Workload
from core.cuda_pair import CudaPair

BATCH, HIDDEN, LAYERS = 8, 4096, 32


class PdlBench(CudaPair):
    source = "pdl.cu"
    requires = Requirements(min_compute_capability=(9, 0), nvcc=True)
    timing_mode = "graph"
    tolerance = Tolerance(rtol=0.0, atol=0.0)  # same kernel, same arithmetic
    reference_tolerance = Tolerance(rtol=1e-5, atol=1e-5)  # tanhf vs float64 tanh, 32 layers
    use_pdl = 0

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        gen = self.generator(ctx.seed)
        self.scale = 1.0 + 0.1 * self.randn(LAYERS, HIDDEN, gen=gen)  # keeps tanh off saturation
        self.bias = 0.1 * self.randn(LAYERS, HIDDEN, gen=gen)
        self.work = torch.empty(2, BATCH * HIDDEN, device=ctx.device)  # ping-pong between layers

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(BATCH, HIDDEN, gen=self.generator(seed))

    def run(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        self.lib.launch_chain(x, self.work, out, self.scale, self.bias, LAYERS, BATCH * HIDDEN,
                              HIDDEN, self.use_pdl)
        return out

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        h = x.double()
        for k in range(LAYERS):
            h = torch.tanh(h * self.scale[k].double() + self.bias[k].double())
        return h

    def workload(self) -> Workload:
        per_layer = 2 * BATCH * HIDDEN * 4 + 2 * HIDDEN * 4  # activation in and out, parameters
        return Workload(bytes=LAYERS * per_layer, units=LAYERS, unit_name="kernels")
