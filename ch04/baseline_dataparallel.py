"""nn.DataParallel: one process drives every GPU.

Every step DataParallel copies the model from GPU 0 to each other GPU (805 MB of weights
each), splits the batch, runs the replicas in Python threads, gathers the outputs on GPU 0,
and in backward sums every replica's gradients onto GPU 0; the optimizer then runs on GPU 0
alone. It is the one-line change a newcomer makes first, and PyTorch's documentation
recommends DistributedDataParallel instead. Its per-step copies, gathers and threads all
grow with the GPU count, while DDP's per-rank work does not (weak scaling, _ddp_common).

The harness runs every pair as one process per GPU; here rank 0 does the whole step on all
GPUs and the other ranks wait (their run() returns nothing, `rank0_output`), so the timed
step is rank 0's. The same global batch of world × 2048 tokens as the DDP side, split the
same way.
"""
import torch.distributed as dist
from torch import nn

from ch04._ddp_common import DataParallelStep


class SingleProcessDataParallel(DataParallelStep):
    supports_cpu = False  # DataParallel needs CUDA devices
    teaching = True  # the newcomer's one-line change PyTorch's docs steer away from
    rank0_output = True

    def setup(self, ctx):
        if dist.get_rank() == 0:
            super().setup(ctx)

    def wrap(self, model):
        return nn.DataParallel(model, device_ids=list(range(dist.get_world_size())))

    def run(self, batch):
        if dist.get_rank() != 0:
            return None
        x, target = (t.flatten(0, 1) for t in batch)  # the global batch; DP splits it by rows
        self.optimizer.zero_grad(set_to_none=False)
        self.loss(self.trained, x, target).backward()
        self.optimizer.step()
        return self.observed()


get_benchmark = SingleProcessDataParallel

if __name__ == "__main__":
    from core.single import main
    main(SingleProcessDataParallel)
