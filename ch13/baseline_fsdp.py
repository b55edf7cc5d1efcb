"""Baseline (memory): DDP, a full replica of weights, gradients and AdamW state per GPU.

Each rank holds all 1.07B fp32 parameters, their gradients, DDP's gradient buckets and
both AdamW moments; backward all-reduces the gradients in buckets, overlapped.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from ch13._fsdp_common import DataParallelStep


class DdpReplicas(DataParallelStep):
    def wrap(self, model: nn.Module) -> nn.Module:
        return DistributedDataParallel(model)

    def mine(self, t: torch.Tensor) -> torch.Tensor:
        return self.local_rows(t)


get_benchmark = DdpReplicas

if __name__ == "__main__":
    from core.single import main
    main(DdpReplicas)
