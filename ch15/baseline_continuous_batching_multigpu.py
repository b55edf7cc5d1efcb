"""One replica per GPU, requests split round-robin, each replica serving static batches.

Request i goes to GPU i mod world (a round-robin load balancer in front of the servers), and
each server runs its share in static batches of 16: a batch is prefilled, decoded until its
longest request is done, and only then does the next batch start. Rows of requests that
finished early sit idle, and one replica can draw most of the long requests while another
runs dry: the batch is done only when the slowest replica is.
"""
from ch15._continuous_batching_common import StaticEngine
from ch15._continuous_batching_multigpu_common import MultiReplicaBench

TIMEOUT_S = 300  # three sides of ~0.35-0.5 s calls: ~45 s estimated on 2 H200s, more on 4


class RoundRobinStatic(MultiReplicaBench):
    description = ("decoder replicas (one per GPU), 24 requests each: round-robin split, static "
                   "batches of 16 per replica")
    # Each rank's Python loop launches every layer's kernels and reads each step's tokens back:
    # on 2 H200s both sides measured host-bound (host time per call 3.1 s and 2.8 s against
    # 3.9 s and 3.0 s on the GPU), and the ranks share the host's cores.
    cpu_bound = ("each replica's serving loop is Python launching a decode step's kernels and "
                 "syncing for its tokens; the host's step rate, shared by the ranks, sets the time")
    slow_because = ("three sides each serve a whole offline batch per call (0.29-0.40 s on "
                    "2 H200s), and each round re-runs the baseline once per side to check the "
                    "timed outputs: 47 s at 4 s of timing a side; the 12 s it now needs for a "
                    "storable interval make it longer")

    def engine(self):
        return StaticEngine(self.model, self.make_kv(), self.sizes.width)

    def serve(self, requests):
        return self.round_robin(requests)


get_benchmark = RoundRobinStatic

if __name__ == "__main__":
    from core.single import main
    main(RoundRobinStatic)
