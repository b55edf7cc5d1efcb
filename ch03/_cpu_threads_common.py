"""Shared by `cpu_threads`: a pool of feeder threads normalizes a batch on the host.

Up to 8 feeder threads (fewer where the process may use fewer CPUs) each take their share
of 128 decoded 3 x 224 x 224 uint8 images (make_inputs, 19 MB, pageable) and write them
normalized, (x / 255 - mean) / std per channel in float32, into a pinned batch buffer
(77 MB); the batch goes to the GPU with a non_blocking copy. Two batch buffers are used in
turn (ch03/_feeder.py). The sides differ only in how many torch intra-op threads each
worker's operations use.

torch parallelizes one elementwise operation over its intra-op threads (OpenMP), and each
thread that calls torch gets its own team of them. Eight feeders with the default count
(one per physical core) ask for eight times as many threads as there are cores.

On a CPU-only machine the pair runs without the copy: the batch stays in host memory, where a
CPU model would read it.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import torch

from ch03._feeder import PinnedRing, usable_cpus
from core.benchmark import BenchContext, Benchmark, Workload

BATCH, CHANNELS, HEIGHT, WIDTH = 128, 3, 224, 224
SHAPE = (BATCH, CHANNELS, HEIGHT, WIDTH)
MEAN = (0.485, 0.456, 0.406)  # ImageNet statistics, on the 0..1 scale
STD = (0.229, 0.224, 0.225)
MAX_WORKERS = 8
RING_SLOTS = 2


class NormalizeFeeder(Benchmark):
    supports_cpu = True
    cpu_bound = "the feeders normalize the batch on the host's cores"

    def setup(self, ctx: BenchContext) -> None:
        self.workers = min(MAX_WORKERS, len(usable_cpus()))
        self.pool = self.start_pool(self.workers)
        self.ring = PinnedRing.allocate(RING_SLOTS, SHAPE, torch.float32, ctx.device)
        # (x / 255 - mean) / std == (x - 255 mean) * (1 / (255 std)): one subtract, one multiply
        self.shift = torch.tensor(MEAN).mul(255).view(CHANNELS, 1, 1)
        self.scale = torch.tensor(STD).mul(255).reciprocal().view(CHANNELS, 1, 1)

    def start_pool(self, workers: int) -> ThreadPoolExecutor:
        """The feeder threads; each side decides how many intra-op threads they use."""
        raise NotImplementedError

    def make_inputs(self, seed: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(seed)
        return torch.empty(SHAPE, dtype=torch.uint8).random_(generator=gen)

    def run(self, images: torch.Tensor) -> torch.Tensor:
        slot = self.ring.next_free()
        list(self.pool.map(self.normalize_into, slot.chunk(self.workers),
                           images.chunk(self.workers)))
        return self.ring.send(slot)

    def normalize_into(self, batch_share: torch.Tensor, images_share: torch.Tensor) -> None:
        """One worker's share: uint8 images to normalized float32, in its part of the batch."""
        torch.sub(images_share, self.shift, out=batch_share)
        batch_share.mul_(self.scale)

    def reference(self, images: torch.Tensor) -> torch.Tensor:
        mean = torch.tensor(MEAN, dtype=torch.float64).view(CHANNELS, 1, 1)
        std = torch.tensor(STD, dtype=torch.float64).view(CHANNELS, 1, 1)
        return ((images.double() / 255 - mean) / std).to(self.device)

    def workload(self) -> Workload:
        if not self.ctx.is_cuda:  # on a CPU run no bytes cross a host link
            return Workload(units=BATCH, unit_name="images")
        return Workload(link_bytes=BATCH * CHANNELS * HEIGHT * WIDTH * 4, link="h2d",
                        units=BATCH, unit_name="images")

    def teardown(self) -> None:
        self.pool.shutdown()
