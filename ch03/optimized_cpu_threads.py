"""Feeder threads that each use one intra-op thread: the parallelism is the pool's.

Each worker sets `torch.set_num_threads(1)` for itself when it starts, so the process runs
one thread per feeder, no more threads than it has cores to give them. This is what the
DataLoader does in each of its worker processes, for the same reason.
"""
from ch03._cpu_threads_common import NormalizeFeeder
from ch03._feeder import feeder_pool


class OneIntraOpThreadEach(NormalizeFeeder):
    def start_pool(self, workers):
        return feeder_pool(workers, intra_op_threads=1)


get_benchmark = OneIntraOpThreadEach

if __name__ == "__main__":
    OneIntraOpThreadEach.main()
