"""NCCL all-reduce of the same tensor: GPU to GPU over NVLink, summed by NCCL's kernels."""
import torch.distributed as dist

from ch04._collective_common import AllReduceSum


class NcclAllReduce(AllReduceSum):
    teaching = True
    elements = 16 << 20

    def run(self, messages):
        out = messages[dist.get_rank()].clone()
        dist.all_reduce(out)  # the default group: NCCL on GPUs (gloo on a CPU-only machine)
        return out


get_benchmark = NcclAllReduce

if __name__ == "__main__":
    from core.single import main
    main(NcclAllReduce)
