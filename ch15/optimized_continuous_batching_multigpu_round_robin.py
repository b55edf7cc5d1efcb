"""Attribution variant: the round-robin split of the baseline, but each replica batches
continuously (free rows refilled at every step). The gap between this and the shared queue
is what least-loaded dispatch adds; the gap to the baseline is what the engine adds.
"""
from ch15._continuous_batching_common import ContinuousEngine
from ch15._continuous_batching_multigpu_common import MultiReplicaBench


class RoundRobinContinuous(MultiReplicaBench):
    description = "decoder replicas (one per GPU): round-robin split, continuous batching per replica"

    def engine(self):
        return ContinuousEngine(self.model, self.make_kv(), self.sizes.width)

    def serve(self, requests):
        return self.round_robin(requests)


get_benchmark = RoundRobinContinuous

if __name__ == "__main__":
    from core.single import main
    main(RoundRobinContinuous)
