"""Baseline (simulated): uniform expert placement, contiguous blocks of experts per GPU.

Experts 0..7 on GPU 0, 8..15 on GPU 1, and so on over a modelled 2-node × 8-GPU cluster, the
default of expert-parallel frameworks. Co-activated experts land on different GPUs and nodes,
so a token is copied to many of them. run() routes the tokens and builds the dispatch plan;
the plan's traffic is priced at link GB/s by ch17/_moe_router_topology_common.py.
"""
from __future__ import annotations

import torch

from ch17._moe_router_topology_common import TopologyBench, uniform_placement


class UniformPlacement(TopologyBench):
    def placement(self) -> torch.Tensor:
        return uniform_placement(self.cluster, self.device)


get_benchmark = UniformPlacement

if __name__ == "__main__":
    from core.single import main
    main(UniformPlacement)
