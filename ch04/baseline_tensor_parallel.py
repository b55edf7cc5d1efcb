"""Weights sharded, gathered for every forward (ZeRO-3 / FSDP style), MLP computed whole.

Each rank stores half of W1's rows and half of W2's rows. Every call all-gathers both into
buffers allocated once, then computes the whole MLP for all tokens: the memory of a shard,
but every rank moves 470 MB over NVLink and does all the FLOPs.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F

from ch04._tensor_parallel_common import TensorParallelMlp


class GatherWeights(TensorParallelMlp):
    def keep(self, w1, w2):
        self.w1_shard = w1.chunk(self.world, dim=0)[self.rank].contiguous()
        self.w2_shard = w2.chunk(self.world, dim=0)[self.rank].contiguous()
        self.w1_full, self.w2_full = torch.empty_like(w1), torch.empty_like(w2)

    def run(self, x):
        dist.all_gather_into_tensor(self.w1_full, self.w1_shard)
        dist.all_gather_into_tensor(self.w2_full, self.w2_shard)
        return F.gelu(x @ self.w1_full.T) @ self.w2_full.T


get_benchmark = GatherWeights

if __name__ == "__main__":
    from core.single import main
    main(GatherWeights)
