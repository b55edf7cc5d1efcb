"""Baseline: all-reduce the gradients, then run the independent compute.

`dist.all_reduce(grads)` as written: NCCL runs the collective on its own stream, but the
call makes the current (compute) stream wait for it, so the GEMMs enqueued after it start
only when the all-reduce is done. The link and the SMs take turns.
"""
import torch
import torch.distributed as dist

from ch11._distributed_streams_common import DistributedStreamsBench


class AllReduceThenCompute(DistributedStreamsBench):
    def run(self, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        rank = dist.get_rank()
        grads = inputs["grads"][rank].clone()  # all-reduce works in place: not on the input
        dist.all_reduce(grads)
        return grads, self.compute(inputs["x"][rank])


get_benchmark = AllReduceThenCompute

if __name__ == "__main__":
    from core.single import main
    main(AllReduceThenCompute)
