"""The DataLoader as constructed by default: the training process decodes every sample.

`DataLoader(dataset, batch_sampler=...)` with nothing else set: `num_workers=0`, so the
process that drives the GPU also reads, inflates, crops and normalizes each image, one after
another; the batch sits in pageable memory, so `.to("cuda")` stages it through a driver
buffer and returns only once the copy is done. While the host decodes a batch, the GPU has
at most the previous batch's forward pass queued, and then nothing.
"""
from torch.utils.data import DataLoader, Dataset

from ch05._dataloader_common import LoaderPipeline, PlanSampler


class InProcessLoader(LoaderPipeline):
    # measured on an H200 (2026-11-28): 50.5 s for the pair (checks 14, timing 22)
    slow_because = ("host decoding spreads ±16% call to call, so the gate needs ~16 rounds of "
                    "0.1-0.5 s calls on three sides, each round checked by rerunning the "
                    "baseline, and the GPU-busy share samples each side for 2 s")

    def make_loader(self, dataset: Dataset, sampler: PlanSampler) -> DataLoader:
        return DataLoader(dataset, batch_sampler=sampler)


get_benchmark = InProcessLoader

if __name__ == "__main__":
    from core.single import main
    main(InProcessLoader)
