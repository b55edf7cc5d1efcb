"""Baseline (simulated): round-robin routing of requests over the replicas.

Request i goes to replica i mod N, the default of most load balancers: each replica gets the
same number of requests whatever their lengths. The fleet is simulated on decoder step costs
measured on this device (ch17/_dynamic_routing_common.py); run() times the simulation.
"""
from __future__ import annotations

from ch17._dynamic_routing_common import RoundRobin, Router, RoutingBench


class RoundRobinRouting(RoutingBench):
    def router(self) -> Router:
        return RoundRobin()


get_benchmark = RoundRobinRouting

if __name__ == "__main__":
    from core.single import main
    main(RoundRobinRouting)
