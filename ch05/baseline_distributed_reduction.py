"""The book's CPU-staged reduction: each GPU's partial sums go to host memory, the CPUs add
them across the ranks, and the totals go back to the GPU.

Every rank sums its shard on its GPU (the shared `partial_sums`). `.cpu()` then copies the
32 KiB [Σx | Σx²] vector to the host, which first waits for the GPU to finish; a gloo
all-reduce (its group created once in setup()) adds the ranks' vectors on the CPUs over TCP;
and `.to(device)` copies the totals back, where the statistics are finished for the next
stage. Teaching: a competent engineer keeps the partials on the GPU and all-reduces them
with NCCL (the optimized side), so the gap is the book's lesson, not a headline.
"""
import torch
import torch.distributed as dist

from ch05._distributed_reduction_common import DatasetStats, finish, partial_sums


class HostStagedStats(DatasetStats):
    teaching = True  # the book's CPU-staged reduction: a lesson, not a headline
    cpu_bound = ("the step waits on a device-to-host copy and a gloo all-reduce over TCP on "
                 "the CPUs; on 2xH200 its speedup interval was ±8% at 2000 samples")

    def setup(self, ctx):
        super().setup(ctx)
        self.gloo = dist.new_group(backend="gloo")  # reduces host tensors, on the CPUs

    def run(self, shards: torch.Tensor) -> torch.Tensor:
        sums = partial_sums(shards[dist.get_rank()])
        on_host = sums.cpu()  # waits for the GPU, then copies 32 KiB over PCIe
        dist.all_reduce(on_host, group=self.gloo)
        return finish(on_host.to(self.device), self.count)


get_benchmark = HostStagedStats

if __name__ == "__main__":
    from core.single import main
    main(HostStagedStats)
