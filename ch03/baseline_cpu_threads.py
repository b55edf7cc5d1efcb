"""Feeder threads whose torch operations use torch's default intra-op thread count.

Each of the feeder threads calls torch, and torch gives each calling thread its own team of
intra-op threads, as many as the machine has physical cores (or OMP_NUM_THREADS). Eight
feeders therefore run up to eight times as many threads as there are cores, each team
forking and joining per operation while the others hold the cores. What a competent engineer
writes first: a thread pool of workers, with torch left at its defaults.
"""
from ch03._cpu_threads_common import NormalizeFeeder
from ch03._feeder import feeder_pool


class DefaultIntraOpThreads(NormalizeFeeder):
    def start_pool(self, workers):
        return feeder_pool(workers)  # every worker: torch's default intra-op thread count


get_benchmark = DefaultIntraOpThreads

if __name__ == "__main__":
    from core.single import main
    main(DefaultIntraOpThreads)
