"""One replica per GPU, requests split round-robin, each replica serving static batches.

Request i goes to GPU i mod world (a round-robin load balancer in front of the servers), and
each server runs its share in static batches of 16: a batch is prefilled, decoded until its
longest request is done, and only then does the next batch start. Rows of requests that
finished early sit idle, and one replica can draw most of the long requests while another
runs dry: the batch is done only when the slowest replica is.
"""
from ch15._continuous_batching_common import StaticEngine
from ch15._continuous_batching_multigpu_common import MultiReplicaBench

TIMEOUT_S = 900  # three sides, each timed up to 20 s on whole batches


class RoundRobinStatic(MultiReplicaBench):
    description = ("decoder replicas (one per GPU), 32 requests each: round-robin split, static "
                   "batches of 16 per replica")

    def engine(self):
        return StaticEngine(self.model, self.make_kv(), self.sizes.width)

    def serve(self, requests):
        return self.round_robin(requests)


get_benchmark = RoundRobinStatic

if __name__ == "__main__":
    from core.single import main
    main(RoundRobinStatic)
