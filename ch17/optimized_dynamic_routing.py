"""Optimized (simulated): queue- and KV-load-aware routing.

Each request goes to the replica, among those with KV room for the whole request, whose queue
clears soonest: the iteration in flight plus the prefills queued ahead, priced with the
measured step costs (a replica short of KV is chosen only when all are). Long prompts no
longer pile up on whichever replica round-robin happened to hand them to. NVIDIA Dynamo's KV
router weighs the same signals (active KV blocks, prefill tokens waiting). Same trace, same
measured step costs, every request served in full; only the placement differs.
"""
from __future__ import annotations

from ch17._dynamic_routing_common import QueueAndKVAware, Router, RoutingBench


class LoadAwareRouting(RoutingBench):

    def router(self) -> Router:
        return QueueAndKVAware()


get_benchmark = LoadAwareRouting

if __name__ == "__main__":
    from core.single import main
    main(LoadAwareRouting)
