"""Feeder threads that share the cores: each uses cores / feeders intra-op threads.

Each worker sets `torch.set_num_threads(cores // feeders)` for itself when it starts, so the
pool as a whole runs one thread per core it may use, no more. (One thread per feeder, what
the DataLoader sets in each worker process, would leave cores idle here: 8 feeders on a
16-core host measured 0.82x against the oversubscribed baseline on an H100 machine.)
"""
from ch03._cpu_threads_common import NormalizeFeeder
from ch03._feeder import feeder_pool, usable_cpus


class CoresSharedOut(NormalizeFeeder):
    def start_pool(self, workers):
        return feeder_pool(workers, intra_op_threads=max(1, len(usable_cpus()) // workers))


get_benchmark = CoresSharedOut

if __name__ == "__main__":
    from core.single import main
    main(CoresSharedOut)
