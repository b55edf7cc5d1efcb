"""Baseline: all-gather the sequence's K and V, then one attention per rank.

Each rank gathers every rank's K and V shard into full-length buffers (one all-gather of
K and V stacked), then runs flash attention of its queries over the whole sequence. The
collective finishes before attention starts: nothing overlaps it, and each rank holds the
whole sequence's K/V.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

from ch13._context_parallel_common import ShardedAttention, heads_first


class AllGatherAttention(ShardedAttention):
    def run(self, inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k, v = (self.shard(t) for t in inputs)
        kv = torch.stack([k, v])  # [2, S/world, H, D]: one collective for both
        world = dist.get_world_size()
        gathered = torch.empty((world * 2, *kv.shape[1:]), device=kv.device, dtype=kv.dtype)
        dist.all_gather_into_tensor(gathered, kv)  # rank r's [k, v] at rows 2r, 2r + 1
        gathered = gathered.view(world, *kv.shape)
        k_all = gathered[:, 0].flatten(0, 1)  # [S, H, D], rank order = sequence order
        v_all = gathered[:, 1].flatten(0, 1)
        out = F.scaled_dot_product_attention(heads_first(q), heads_first(k_all), heads_first(v_all))
        return out.transpose(1, 2)


get_benchmark = AllGatherAttention

if __name__ == "__main__":
    from core.single import main
    main(AllGatherAttention)
