"""Shared by `numa_affinity`: a pool of feeder threads crops images into a pinned batch.

On a machine with two or more NUMA nodes, each GPU hangs off one CPU socket. Memory on the
other socket's node is reached through the inter-socket link: slower for the threads that
write the batch, and slower for the GPU's DMA engine that reads it.

The feeder: up to 8 threads each center-crop their share of 256 decoded 3 x 256 x 256 uint8
images (make_inputs, 50 MB, pageable, wherever the harness's thread placed them) to
3 x 224 x 224 (the classic resize-256, crop-224 step) into a pinned batch buffer (38.5 MB),
and the batch goes to the GPU with a non_blocking copy. Two batch buffers are used in turn
(ch03/_feeder.py). Each worker uses one torch intra-op thread (the `cpu_threads` lesson), on
both sides: the sides differ only in where the threads run and where the buffers' pages are.

The buffers' pages are placed by first touch: Linux puts a page on the NUMA node of the CPU
that first writes it. `FirstTouchedPinned` maps fresh pages, has the pool's own threads
zero them (each its share), then page-locks them for DMA (cudaHostRegister) where they are.
"""
from __future__ import annotations

import math
import mmap
import os
from concurrent.futures import ThreadPoolExecutor

import torch

from ch03._feeder import PinnedRing, usable_cpus
from core.benchmark import BenchContext, Benchmark, Requirements, Workload

BATCH, CHANNELS, SOURCE, CROP = 256, 3, 256, 224
OFFSET = (SOURCE - CROP) // 2  # center crop
SHAPE = (BATCH, CHANNELS, CROP, CROP)
BATCH_BYTES = BATCH * CHANNELS * CROP * CROP  # uint8
MAX_WORKERS = 8
RING_SLOTS = 2


def gpu_local_cpus(device: str) -> list[int]:
    """The CPUs NVML names as this GPU's ideal affinity (the cores of its NUMA node), among
    those this process may use. A clear error where there is nothing to bind to."""
    import pynvml

    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    try:  # a private torch helper that maps through CUDA_VISIBLE_DEVICES, as NVML needs
        nvml_index = torch.cuda._get_nvml_device_index(index)
    except Exception:  # noqa: BLE001 - where it is missing or fails, the CUDA index
        nvml_index = index
    words = (os.cpu_count() + 63) // 64
    pynvml.nvmlInit()
    try:
        mask = pynvml.nvmlDeviceGetCpuAffinity(pynvml.nvmlDeviceGetHandleByIndex(nvml_index), words)
    finally:
        pynvml.nvmlShutdown()
    ideal = {64 * w + bit for w, word in enumerate(mask) for bit in range(64) if word >> bit & 1}
    allowed = usable_cpus()
    local = sorted(ideal & allowed)
    if not local:
        raise RuntimeError(f"ch03/numa_affinity: none of GPU {index}'s NUMA-local CPUs "
                           f"{sorted(ideal)} is in this process's CPU set {sorted(allowed)}; "
                           f"run it with CPUs of the GPU's node allowed (taskset, cpuset)")
    if ideal >= allowed:
        raise RuntimeError(f"ch03/numa_affinity: every CPU this process may use counts as local "
                           f"to GPU {index} (NVML: {len(ideal)} CPUs), so binding changes nothing "
                           f"here: the process is already confined to the GPU's node, or NVML "
                           f"knows no NUMA locality for this GPU (as on many VMs)")
    return local


class FirstTouchedPinned:
    """A pinned buffer whose pages were first written by `pool`'s threads, one share each."""

    def __init__(self, pool: ThreadPoolExecutor, workers: int, shape: tuple[int, ...],
                 dtype: torch.dtype):
        nbytes = math.prod(shape) * dtype.itemsize
        self.memory = mmap.mmap(-1, nbytes)  # fresh anonymous pages: no node chosen yet
        flat = torch.frombuffer(self.memory, dtype=torch.uint8)
        list(pool.map(torch.Tensor.zero_, flat.chunk(workers)))  # the first touch
        torch.cuda.check_error(torch.cuda.cudart().cudaHostRegister(flat.data_ptr(), nbytes, 0))
        self.pointer = flat.data_ptr()
        self.tensor = flat.view(dtype).view(shape)

    def release(self) -> None:
        torch.cuda.check_error(torch.cuda.cudart().cudaHostUnregister(self.pointer))


class CropFeeder(Benchmark):
    requires = Requirements(numa_nodes=2)

    def setup(self, ctx: BenchContext) -> None:
        local = gpu_local_cpus(ctx.device)
        self.workers = min(MAX_WORKERS, len(local))  # the same count on both sides
        self.pool = self.start_pool(self.workers, local)
        # the pool's threads write the buffers first: their pages land where those threads run
        self.buffers = [FirstTouchedPinned(self.pool, self.workers, SHAPE, torch.uint8)
                        for _ in range(RING_SLOTS)]
        self.ring = PinnedRing([b.tensor for b in self.buffers], ctx.device)

    def start_pool(self, workers: int, local_cpus: list[int]) -> ThreadPoolExecutor:
        """The feeder threads; each side decides where they run."""
        raise NotImplementedError

    def make_inputs(self, seed: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(seed)
        return torch.empty(BATCH, CHANNELS, SOURCE, SOURCE, dtype=torch.uint8).random_(generator=gen)

    def run(self, images: torch.Tensor) -> torch.Tensor:
        slot = self.ring.next_free()
        list(self.pool.map(crop_into, slot.chunk(self.workers), images.chunk(self.workers)))
        return self.ring.send(slot)

    def reference(self, images: torch.Tensor) -> torch.Tensor:
        return images[:, :, OFFSET:OFFSET + CROP, OFFSET:OFFSET + CROP].to(self.device)

    def workload(self) -> Workload:
        return Workload(link_bytes=BATCH_BYTES, link="h2d", units=BATCH, unit_name="images")

    def teardown(self) -> None:
        torch.cuda.synchronize()  # no copy may still read a buffer we unregister
        for buffer in self.buffers:
            buffer.release()
        self.pool.shutdown()


def crop_into(batch_share: torch.Tensor, images_share: torch.Tensor) -> None:
    """One worker's share: center-crop its images into its part of the pinned batch."""
    batch_share.copy_(images_share[:, :, OFFSET:OFFSET + CROP, OFFSET:OFFSET + CROP])
