"""DistributedDataParallel: gradients all-reduced in 25 MB buckets while backward goes on.

DDP registers a hook per parameter; when every gradient of a bucket is ready it launches
that bucket's all-reduce on NCCL's stream, so the links carry earlier layers' gradients while
the SMs compute later ones. `gradient_as_bucket_view=True` makes .grad a view of the bucket
(no copy in or out). Only the last bucket's all-reduce is left after backward.
"""
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from ch04._ddp_common import DataParallelStep


class OverlappedDdp(DataParallelStep):
    bucket_cap_mb = 25  # DDP's default

    def wrap(self, model):
        device_ids = [torch.cuda.current_device()] if self.ctx.is_cuda else None
        return DDP(model, device_ids=device_ids, bucket_cap_mb=self.bucket_cap_mb,
                   gradient_as_bucket_view=True)


get_benchmark = OverlappedDdp

if __name__ == "__main__":
    from core.single import main
    main(OverlappedDdp)
