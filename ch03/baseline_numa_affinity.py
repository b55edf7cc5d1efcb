"""Feeder threads left where the scheduler puts them; buffers first touched by those threads.

The pool's threads run on whichever cores the scheduler picks, on either socket, and may move
between them; the pinned batch buffers' pages land on whichever node each thread happened to
be on when it first wrote them. What a competent engineer writes first: nothing in Python
says where a thread or a page lives.
"""
from ch03._feeder import feeder_pool
from ch03._numa_affinity_common import CropFeeder


class AnyNode(CropFeeder):
    def start_pool(self, workers, local_cpus):
        return feeder_pool(workers, intra_op_threads=1)


get_benchmark = AnyNode

if __name__ == "__main__":
    from core.single import main
    main(AnyNode)
