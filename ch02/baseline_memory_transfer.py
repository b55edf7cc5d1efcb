"""Baseline: `batch.to("cuda")` from pageable host memory, the line a training loop starts with.

The GPU's copy engines can only DMA from page-locked (pinned) host memory: the OS may move a
pageable page at any time. So for a pageable source the CUDA driver copies the batch piece by
piece into its own small pinned staging buffers, on the calling CPU thread, and the copy
engine DMAs each piece from there; torch then waits for the copy to finish before `.to()`
returns. The result is a new device tensor each call, from torch's caching allocator.
"""
import torch

from ch02._memory_transfer_common import TransferBench


class PageableTransfer(TransferBench):
    # The driver's staging copies run on the calling CPU thread at the host's memcpy speed:
    # the same batch took 9.8 ms on one H200 VM and 5.5 ms on another (README).
    cpu_bound = ("the driver stages a pageable batch through pinned buffers with memcpy on "
                 "the calling CPU thread, so the host's memory speed sets the baseline's pace")

    def run(self, batch: torch.Tensor) -> torch.Tensor:
        return batch.to(self.device)


get_benchmark = PageableTransfer

if __name__ == "__main__":
    from core.single import main
    main(PageableTransfer)
