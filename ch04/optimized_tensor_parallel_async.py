"""Async tensor parallelism: the second GEMM and the reduction of its output overlapped.

Megatron's split as in `tensor_parallel`, but the all-reduce at the end is decomposed. PyTorch's
`fused_matmul_reduce_scatter` (symmetric memory) computes the [tokens, d] partial output in
pieces and reduce-scatters each piece over NVLink while the next is computed, so each rank
ends with the sum for its 1/world of the tokens (2048 divides by 2, 4 and 8); an all-gather
then gives every rank all of them, the same output as the all-reduce. The same bytes cross the links; the win, where
there is one, is the reduce-scatter hidden behind the GEMM.
"""
from dataclasses import replace

import torch
import torch.distributed as dist
import torch.nn.functional as F

from ch04.optimized_tensor_parallel import ColumnThenRow


class AsyncTensorParallel(ColumnThenRow):
    supports_cpu = False  # symmetric memory is CUDA memory
    requires = replace(ColumnThenRow.requires, one_node=True)  # NVLink-mapped peers: one machine

    def setup(self, ctx):
        from torch.distributed._symmetric_memory import enable_symm_mem_for_group

        super().setup(ctx)
        if self.sizes()[2] % self.world:
            raise ValueError(f"{self.sizes()[2]} tokens do not reduce-scatter evenly over "
                             f"{self.world} ranks; run on 2, 4 or 8 GPUs")
        self.group = dist.group.WORLD.group_name
        enable_symm_mem_for_group(self.group)

    def run(self, x):
        hidden = F.gelu(x @ self.w1_cols.T)
        mine = torch.ops.symm_mem.fused_matmul_reduce_scatter(
            hidden, self.w2_rows.T, "sum", scatter_dim=0, group_name=self.group)
        out = torch.empty_like(x)
        dist.all_gather_into_tensor(out, mine)
        return out


get_benchmark = AsyncTensorParallel

if __name__ == "__main__":
    from core.single import main
    main(AsyncTensorParallel)
