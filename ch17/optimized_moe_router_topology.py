"""Optimized (simulated): locality-aware expert placement from measured co-activation.

In setup(), a calibration batch's routing gives how often each pair of experts fires for the
same token; a greedy partition then puts experts that fire together on one GPU (equal
expert counts per GPU). The same tokens go to the same experts, but a token's experts now
sit on fewer GPUs, so it is copied fewer times and less often across nodes. Production
systems do this from router statistics (DeepSeek's EPLB rebalances replicas by load; the same
data gives co-activation).
"""
from __future__ import annotations

import torch

from ch17._moe_router_topology_common import TopologyBench, coactivation, locality_placement


class LocalityAwarePlacement(TopologyBench):
    goal = "simulated_cost"  # gated on the modelled all-to-all time, not on the planning's

    def placement(self) -> torch.Tensor:
        co = coactivation(self.calibration_ids(), self.cluster.experts)
        return locality_placement(co, self.cluster.gpus).to(self.device)


get_benchmark = LocalityAwarePlacement

if __name__ == "__main__":
    from core.single import main
    main(LocalityAwarePlacement)
