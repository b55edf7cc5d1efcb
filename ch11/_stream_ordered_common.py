"""Shared by `stream_ordered`: 16 tasks over 4 streams, each needing a 16 MiB scratch buffer.

A call reduces 16 slices of 1024 × 4096 fp32 (16 MiB each, 256 MiB in all) to the mean of
squares of every row, the statistic an RMS norm needs. Each task squares its slice into a
scratch buffer and reduces the rows from there: a stand-in for any library call that needs a
temporary workspace (cuBLAS, cuFFT, a sort) the size of its input. Task t runs on stream
t % 4, so independent tasks may overlap. Every side runs the same two kernels from
stream_ordered.cu on the same streams; they differ in where each task's scratch comes from:
cudaMalloc/cudaFree per task (baseline, teaching), a stream-ordered pool per task (optimized)
or one buffer per stream allocated once in setup() (the prealloc variant, the floor).
The row means are bit-identical between the sides (a fixed summation order in one kernel).
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Tolerance, Workload
from core.cuda_pair import CudaPair

TASKS, ROWS, COLS = 16, 1024, 4096
STREAMS = 4


class StreamOrderedBench(CudaPair):
    source = "stream_ordered.cu"
    tolerance = Tolerance(rtol=0.0, atol=0.0)  # same kernels, same order of summation
    reference_tolerance = Tolerance(rtol=1e-5, atol=1e-6)  # fp32 sums of 4096 squares

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.streams = [torch.cuda.Stream() for _ in range(STREAMS)]
        # the launchers read the handles on the host: an int64 CPU tensor
        self.handles = torch.tensor([s.cuda_stream for s in self.streams], dtype=torch.int64)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(TASKS, ROWS, COLS, gen=self.generator(seed))

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        return x.double().square().mean(dim=-1)

    def run(self, x: torch.Tensor) -> torch.Tensor:
        caller = torch.cuda.current_stream()
        out = torch.empty(TASKS, ROWS, device=self.device)  # allocated on the caller's stream
        for stream in self.streams:
            stream.wait_stream(caller)  # x and out are ready before any task starts
        self.launch(x, out)
        for stream in self.streams:
            caller.wait_stream(stream)  # the caller's timing sees every task
        return out

    def launch(self, x: torch.Tensor, out: torch.Tensor) -> None:
        raise NotImplementedError

    def workload(self) -> Workload:
        # read x, write and read the scratch, write the means: 3 passes over 256 MiB
        return Workload(bytes=3 * TASKS * ROWS * COLS * 4 + TASKS * ROWS * 4)
