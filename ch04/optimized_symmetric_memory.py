"""One-shot all-reduce over PyTorch symmetric memory.

setup() allocates a buffer in symmetric memory (`symm_mem.empty`) and exchanges its handle
with the peers (`rendezvous`): each GPU can then load every other GPU's buffer directly over
NVLink. run() copies this rank's activations into the buffer (the input's conversion is part
of the work) and `torch.ops.symm_mem.one_shot_all_reduce` has every GPU read all peers'
buffers and sum them in one kernel, with a barrier on the buffers' signal pads instead of
NCCL's protocol. Multicast (NVLS) stays off here (TORCH_SYMM_MEM_DISABLE_MULTICAST=1).
"""
from dataclasses import replace

import torch
import torch.distributed as dist

from ch04._symmetric_memory_common import BATCH, HIDDEN, DecodeAllReduce


class OneShotSymmetric(DecodeAllReduce):
    supports_cpu = False  # symmetric memory is CUDA memory
    # NVLink-mapped peers: one machine. From 4 GPUs: with one peer the one-shot kernel has
    # little of NCCL's protocol left to remove, and fresh 2xH200 machines measured it at
    # 0.998-1.03x, parity, which no gate can hold (README); on 4 it is 1.24x.
    requires = replace(DecodeAllReduce.requires, one_node=True, gpus=4)

    def setup(self, ctx):
        import torch.distributed._symmetric_memory as symm_mem

        self.group = dist.group.WORLD.group_name
        self.buffer = symm_mem.empty(BATCH, HIDDEN, dtype=torch.bfloat16, device=ctx.device)
        symm_mem.rendezvous(self.buffer, self.group)

    def run(self, rows):
        self.buffer.copy_(rows[dist.get_rank()])
        return torch.ops.symm_mem.one_shot_all_reduce(self.buffer, "sum", self.group)


get_benchmark = OneShotSymmetric

if __name__ == "__main__":
    from core.single import main
    main(OneShotSymmetric)
