"""Preallocated: one scratch buffer per stream, allocated once in setup() and reused by every
task on that stream.

What an engineer who owns the loop writes before reaching for an allocator: no cudaMalloc,
no cudaFree, no pool, so nothing synchronizes and the four streams run side by side, as on
the pool side. A stream runs its tasks in order, so its next task may overwrite the buffer
its last task used. This is the floor the pool side is measured against: the same kernels on
the same streams with the allocation cost at zero. The pool buys the same overlap without the
caller having to know the number of streams and the size of every buffer in advance.
"""
import torch

from ch11._stream_ordered_common import COLS, ROWS, STREAMS, TASKS, StreamOrderedBench
from core.benchmark import BenchContext


class PreallocatedPerStream(StreamOrderedBench):
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        # a workspace, as setup() may hold: 4 × 16 MiB, the pool side's working set
        self.scratch = torch.empty(STREAMS, ROWS, COLS, device=self.device)

    def launch(self, x: torch.Tensor, out: torch.Tensor) -> None:
        self.lib.launch_tasks_prealloc(x, out, self.scratch, TASKS, ROWS, COLS, self.handles,
                                       STREAMS)


get_benchmark = PreallocatedPerStream

if __name__ == "__main__":
    from core.single import main
    main(PreallocatedPerStream)
