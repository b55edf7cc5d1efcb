"""Shared by `pinned_host`: a training loop's feeder hands the GPU one batch per step.

A batch is 256 decoded images of 3 x 224 x 224 uint8 (147 KiB each, 38.5 MB in all), the
batch an ImageNet-style loader yields; the model converts and normalizes them on the GPU.
make_inputs builds the samples a Dataset returns: one tensor per image, in pageable memory.
run() collates them into one batch, stages it in pinned memory, starts a non_blocking copy
to the GPU and returns the batch on the GPU, which must equal torch.stack(samples).

Everything the host does is timed: while the host collates, the GPU's stream is idle between
the harness's CUDA events, so the samples cover host work and copy alike. The copy of one
batch overlaps the host work of the next, as in a real feeder; a sample lasts about
max(host work, copy).
"""
from __future__ import annotations

import torch

from core.benchmark import Benchmark, Workload

BATCH, CHANNELS, HEIGHT, WIDTH = 256, 3, 224, 224
SHAPE = (BATCH, CHANNELS, HEIGHT, WIDTH)
BATCH_BYTES = BATCH * CHANNELS * HEIGHT * WIDTH  # uint8
RING_SLOTS = 3  # the host fills one slot while the GPU copies out of another


class FeederStep(Benchmark):
    def make_inputs(self, seed: int) -> tuple[torch.Tensor, ...]:
        gen = torch.Generator().manual_seed(seed)  # host memory: the samples a Dataset returns
        return tuple(torch.empty(CHANNELS, HEIGHT, WIDTH, dtype=torch.uint8).random_(generator=gen)
                     for _ in range(BATCH))

    def reference(self, samples: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return torch.stack(samples).to(self.device)  # plain, blocking, pageable: the same bytes

    def workload(self) -> Workload:
        return Workload(link_bytes=BATCH_BYTES, link="h2d", units=BATCH, unit_name="images")
