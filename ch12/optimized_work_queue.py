"""Optimized: persistent warps pull items from an atomic work queue, a batch per warp.

A grid of exactly the blocks that fit at once; every lane works on one item at a time, four
steps per loop iteration, with its next item already staged (its loads issued a chunk
ahead, so a lane that finishes never stalls its warp on memory). A warp claims 32 items
with a single atomicAdd on a global counter (warp-batched grabs: one atomic per 32 items,
not per item) and hands them to its lanes as they finish, so lanes stay busy until the
queue is empty. The counter is reset by the launcher each call (part of the cost).
"""
import torch

from ch12._work_queue_common import N, Inputs, WorkQueueBench
from core.benchmark import BenchContext


class AtomicWorkQueue(WorkQueueBench):
    negative_result = ("one thread per item already lets the block scheduler balance whole "
                       "blocks; the queue's atomics, staging and persistent loop cost more than "
                       "the lane imbalance they remove (0.73x on an H100)")
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.next = torch.zeros(1, dtype=torch.int64, device=ctx.device)  # the queue's head
        self.grid = self.natural_grid("queue_blocks_per_sm")

    def run(self, inputs: Inputs):
        rotations, iters = inputs
        self.lib.launch_queue(rotations, iters, self.out, N, self.next, self.grid)
        return self.out


get_benchmark = AtomicWorkQueue

if __name__ == "__main__":
    from core.single import main
    main(AtomicWorkQueue)
