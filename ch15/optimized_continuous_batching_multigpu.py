"""Replicas pulling from one shared queue (least-loaded dispatch), each batching continuously.

The queue's head is a counter in a TCPStore hosted by rank 0. Before each step, a replica
with free rows claims that many requests (one atomic add), prefills them at once and adds
them to its running batch (iteration-level batching). No row idles while work is queued,
no replica runs dry while another has a backlog, and none waits for the others.
"""
from ch15._continuous_batching_common import ContinuousEngine
from ch15._continuous_batching_multigpu_common import (MultiReplicaBench, SharedQueue, rank0_store,
                                                       serve_pulling)


class SharedQueueLeastLoaded(MultiReplicaBench):
    description = "decoder replicas (one per GPU): shared queue, least-loaded dispatch, continuous batching"

    def setup(self, ctx):
        super().setup(ctx)
        self.store = rank0_store()

    def engine(self):
        return ContinuousEngine(self.model, self.make_kv(), self.sizes.width)

    def serve(self, requests):
        self.calls += 1  # a fresh queue (counter key) per call
        queue = SharedQueue(self.store, f"queue-head-{self.calls}", len(requests))
        return serve_pulling(self.engine(), requests, queue, self.sizes.width)


get_benchmark = SharedQueueLeastLoaded

if __name__ == "__main__":
    from core.single import main
    main(SharedQueueLeastLoaded)
