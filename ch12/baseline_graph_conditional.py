"""Baseline: the host decides after every iteration whether to go on.

solve_host_loop (C++, graph_conditional.cu) launches an iteration's three kernels, copies the
16-byte solver state to pinned host memory, waits for the stream and reads the `go` flag:
what a solver loop with a convergence test looks like when the test's answer lives on the
GPU. Each iteration pays a device-to-host copy, a synchronization, and launches that cannot
start until the host has seen the flag, so the GPU idles for a round trip per iteration.
"""
import torch

from ch12._graph_conditional_common import DIAG, MAX_LOOPS, N, TOL, ConditionalBench
from core.benchmark import BenchContext


class HostLoop(ConditionalBench):
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.host_state = torch.zeros(4, dtype=torch.int32).pin_memory()

    def run(self, b: torch.Tensor) -> torch.Tensor:
        self.lib.solve_host_loop(b, self.x, self.scratch, self.partials, self.state,
                                 self.host_state, N, DIAG, TOL, MAX_LOOPS)
        return self.x


get_benchmark = HostLoop

if __name__ == "__main__":
    from core.single import main
    main(HostLoop)
