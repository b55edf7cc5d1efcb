"""Optimized: stream-ordered allocation, cudaMallocFromPoolAsync / cudaFreeAsync on the task's
stream, from a memory pool with a release threshold.

The allocation and the free are operations on the task's stream, ordered with its kernels
like any other: nothing waits for the device, the host enqueues all 16 tasks at once, and the
four streams run side by side. The pool (made once in setup()) keeps freed memory mapped up
to its release threshold, here the four streams' working set with room to spare; without it
the pool hands memory back to the OS at every synchronization and the next call maps it
again. Each stream reuses the block it freed itself, so the pool never has to make one stream
wait for another (cudaMemPoolReuseAllowInternalDependencies is off). The prealloc variant
(buffers allocated once in setup()) is the floor to hold this side against: the pool is for
code that cannot own its buffers' lifetimes, such as a library called from someone else's
loop.
"""
import torch

from ch11._stream_ordered_common import COLS, ROWS, STREAMS, TASKS, StreamOrderedBench
from core.benchmark import BenchContext

RELEASE_THRESHOLD = 2 * STREAMS * ROWS * COLS * 4  # bytes the pool keeps: 128 MiB


class PoolPerTask(StreamOrderedBench):
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        handle = torch.zeros(1, dtype=torch.int64)
        self.lib.create_pool(RELEASE_THRESHOLD, handle)
        self.pool = int(handle[0])

    def launch(self, x: torch.Tensor, out: torch.Tensor) -> None:
        self.lib.launch_tasks_pool(x, out, TASKS, ROWS, COLS, self.handles, STREAMS, self.pool)

    def teardown(self) -> None:
        torch.cuda.synchronize()  # every freed block is back in the pool
        self.lib.destroy_pool(self.pool)


get_benchmark = PoolPerTask

if __name__ == "__main__":
    from core.single import main
    main(PoolPerTask)
