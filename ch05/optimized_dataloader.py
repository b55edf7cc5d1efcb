"""Worker processes decode ahead of the GPU, into pinned memory, copied without blocking.

- `num_workers=WORKERS`: that many processes read and decode samples in parallel, each one
  assembling whole batches, while the training process only launches copies and kernels.
- `pin_memory=True`: a thread of the training process copies each finished batch into
  page-locked memory, which the GPU's copy engine reads directly (no staging copy by the
  driver) and which lets the copy run asynchronously.
- `non_blocking=True`: `.to("cuda")` enqueues the copy and returns; the forward pass is
  queued behind it on the same stream, and the host goes on to the next batch.
- `persistent_workers=True`: the workers start once, in setup(), and serve every call; without
  it each pass over the loader would fork WORKERS processes again.
- `prefetch_factor=2` (the default, set here to show it): each worker has up to two batches
  requested ahead; 8 workers × 2 is 16 batches, so a whole call's plan is requested at once.

WORKERS: 8 on a machine with 10 or more usable cores, leaving the rest to the training
process, its pin-memory thread and the harness; fewer on smaller machines.
"""
from torch.utils.data import DataLoader, Dataset

from ch05._dataloader_common import LoaderPipeline, PlanSampler, require_shared_memory, usable_cpus

WORKERS = min(8, max(1, usable_cpus() - 2))


class WorkerLoader(LoaderPipeline):
    non_blocking = True

    def make_loader(self, dataset: Dataset, sampler: PlanSampler) -> DataLoader:
        require_shared_memory(self.cfg.steps * self.batch_bytes)  # a whole call in flight
        return DataLoader(dataset, batch_sampler=sampler, num_workers=WORKERS,
                          pin_memory=self.ctx.is_cuda, prefetch_factor=2,
                          persistent_workers=True)


get_benchmark = WorkerLoader

if __name__ == "__main__":
    from core.single import main
    main(WorkerLoader)
