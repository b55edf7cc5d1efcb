"""The pinned ring, but the batch is collated into pageable memory and then copied into it.

This variant moves only the pinned *allocation* out of the loop and keeps both host copies
of the baseline. It measures the usual explanation of why `pin_memory()` per batch is slow
(a cudaHostAlloc every step): PyTorch's pin_memory() allocates from its caching host
allocator, which hands the same pinned blocks back once their copies have finished, so after
the first few batches the baseline allocates no pinned memory either. Expected: no faster
than the baseline; the gain of `pinned_host` comes from collating into pinned memory.
"""
import torch

from ch03._feeder import PinnedRing
from ch03._pinned_host_common import RING_SLOTS, SHAPE, FeederStep


class CopyIntoPinnedRing(FeederStep):
    negative_result = ("attribution variant: only the pinned allocation leaves the loop, and "
                       "PyTorch's caching host allocator already reuses pinned blocks, so both "
                       "host copies remain (README)")

    def setup(self, ctx):
        self.ring = PinnedRing.allocate(RING_SLOTS, SHAPE, torch.uint8, ctx.device)

    def run(self, samples):
        batch = torch.stack(samples)  # pageable, as in the baseline
        slot = self.ring.next_free()
        slot.copy_(batch)  # the second host copy, into a slot allocated once
        return self.ring.send(slot)


get_benchmark = CopyIntoPinnedRing

if __name__ == "__main__":
    from core.single import main
    main(CopyIntoPinnedRing)
