"""Optimized (goal memory): activation checkpointing of every block.

Each block runs under `torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)`:
forward keeps only the block's input; backward runs the block's forward again to rebuild
its intermediates, one block at a time. Saved activations drop from ~0.5 GB per block to
the 32 MB input, for about one extra forward pass (~a third more compute). The gate judges
the peak device memory; the time cost is reported beside it.

The allocator's `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` is the other half of
the chapter's memory lesson (less fragmentation, a lower reserved peak); it must be set
before CUDA initializes, so it is a process setting, not something a pair can switch.
"""
from __future__ import annotations

from ch13.baseline_memory_profiling import KeepActivations


class CheckpointedBlocks(KeepActivations):
    goal = "memory"
    checkpoint_blocks = True


get_benchmark = CheckpointedBlocks

if __name__ == "__main__":
    from core.single import main
    main(CheckpointedBlocks)
