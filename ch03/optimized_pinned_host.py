"""Collate straight into pinned ring buffers allocated once, then a non_blocking copy.

Three pinned batch buffers are allocated in setup() and used in turn. The samples are
stacked directly into the next free slot (`torch.stack(..., out=slot)`), so the batch is
written once, into memory that is already pinned and already faulted in; no pageable
batch, no second copy. Each slot's event makes the host wait, before refilling a slot,
until the GPU has finished copying out of it (ch03/_feeder.py).
"""
import torch

from ch03._feeder import PinnedRing
from ch03._pinned_host_common import RING_SLOTS, SHAPE, FeederStep


class CollateIntoPinnedRing(FeederStep):
    def setup(self, ctx):
        self.ring = PinnedRing.allocate(RING_SLOTS, SHAPE, torch.uint8, ctx.device)

    def run(self, samples):
        slot = self.ring.next_free()  # waits until the GPU has copied this slot's last batch
        torch.stack(samples, out=slot)  # collate into pinned memory
        return self.ring.send(slot)


get_benchmark = CollateIntoPinnedRing

if __name__ == "__main__":
    from core.single import main
    main(CollateIntoPinnedRing)
