"""Megatron-style tensor parallelism: W1 split by output columns, W2 by input rows.

Each rank computes GELU(x · W1_shardᵀ), its 1/world of the hidden activations (GELU is
elementwise, so no exchange is needed), multiplies by its rows of W2, and one all-reduce of
the [tokens, d] partial outputs (33.5 MB) sums the pieces. 1/world of the FLOPs per rank;
the all-reduce's bytes per rank, 2(n-1)/n of 33.5 MB, grow towards twice the message.
"""
import torch.distributed as dist
import torch.nn.functional as F

from ch04._tensor_parallel_common import TensorParallelMlp


class ColumnThenRow(TensorParallelMlp):
    def keep(self, w1, w2):
        self.w1_cols = w1.chunk(self.world, dim=0)[self.rank].contiguous()  # [hidden/world, d]
        self.w2_rows = w2.chunk(self.world, dim=1)[self.rank].contiguous()  # [d, hidden/world]

    def run(self, x):
        partial = F.gelu(x @ self.w1_cols.T) @ self.w2_rows.T
        dist.all_reduce(partial)
        return partial


get_benchmark = ColumnThenRow

if __name__ == "__main__":
    from core.single import main
    main(ColumnThenRow)
