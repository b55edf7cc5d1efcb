"""Optimized: the loop is a conditional WHILE node inside one CUDA graph.

setup() builds the graph once (graph_conditional.cu: build_conditional_solver): the init
kernels, then a WHILE node whose body is the iteration's three kernels; the last of them calls
cudaGraphSetConditional with the same `go` the host computed in the baseline. run() copies
the call's b into the graph's static buffer (part of the cost) and launches the graph: the
GPU runs every iteration back to back with no host round trip.
"""
import ctypes

import torch

from ch12._graph_conditional_common import DIAG, MAX_LOOPS, N, TOL, ConditionalBench
from core.benchmark import BenchContext


class ConditionalGraph(ConditionalBench):
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.b_static = torch.zeros(N, device=ctx.device)
        handle = ctypes.c_int64(0)
        self.lib.build_conditional_solver(self.b_static, self.x, self.scratch, self.partials,
                                          self.state, N, DIAG, TOL, MAX_LOOPS, ctypes.byref(handle))
        self.handle = handle.value

    def run(self, b: torch.Tensor) -> torch.Tensor:
        self.b_static.copy_(b)
        self.lib.launch_conditional_solver(self.handle)
        return self.x

    def teardown(self) -> None:
        if getattr(self, "handle", 0):
            self.lib.destroy_conditional_solver(self.handle)
            self.handle = 0


get_benchmark = ConditionalGraph

if __name__ == "__main__":
    from core.single import main
    main(ConditionalGraph)
