"""The feeder's building blocks, shared by the chapter-3 pairs.

A feeder is the host side of a training loop: it turns samples into a batch in host memory and
copies the batch to the GPU. Two pieces recur in this chapter:

PinnedRing: pinned host buffers allocated once and reused in turn. A non_blocking copy out of
pinned memory returns before the GPU has read the buffer, so every slot records an event after
its copy, and the next writer of that slot waits for it: a slot is never overwritten while its
copy is still running. With several slots the host fills one while the GPU copies another.

feeder_pool: a pool of feeder threads that all exist (and are set up) before the first batch:
optionally bound to a set of CPUs, optionally limited to a number of torch intra-op threads.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

import torch


class PinnedRing:
    """Host staging buffers used in turn: `next_free()` a slot, fill it, `send()` it."""

    def __init__(self, slots: Sequence[torch.Tensor], device: str):
        self.slots = list(slots)
        self.device = device
        self.on_gpu = device.startswith("cuda")
        # One event per slot, recorded after the copy out of it (CUDA only).
        self.copied = [torch.cuda.Event() if self.on_gpu else None for _ in self.slots]
        self.turn = 0

    @classmethod
    def allocate(cls, count: int, shape: tuple[int, ...], dtype: torch.dtype, device: str
                 ) -> PinnedRing:
        """`count` buffers of `shape`, pinned where the device is a GPU (pinning needs the CUDA
        driver; on a CPU run the batch stays where the model reads it)."""
        pinned = device.startswith("cuda")
        return cls([torch.empty(shape, dtype=dtype, pin_memory=pinned) for _ in range(count)],
                   device)

    def next_free(self) -> torch.Tensor:
        """The next slot in turn, once the GPU has finished copying out of it."""
        event = self.copied[self.turn]
        if event is not None:
            event.synchronize()  # returns at once for a slot never sent
        return self.slots[self.turn]

    def send(self, slot: torch.Tensor) -> torch.Tensor:
        """Start the copy of `slot` (the one next_free() returned, now filled) to the device
        and return the device tensor; the host does not wait for the copy."""
        if slot is not self.slots[self.turn]:
            raise ValueError("PinnedRing.send(): send the slot next_free() returned, once")
        if self.on_gpu:
            out = slot.to(self.device, non_blocking=True)
            self.copied[self.turn].record()  # on the current stream, after the copy
        else:
            out = slot  # a CPU model reads the staged batch where it is
        self.turn = (self.turn + 1) % len(self.slots)
        return out


def usable_cpus() -> set[int]:
    """The CPUs this process may run on (its affinity mask: cgroups and taskset included)."""
    return os.sched_getaffinity(0)


def feeder_pool(workers: int, *, cpus: Iterable[int] | None = None,
                intra_op_threads: int | None = None) -> ThreadPoolExecutor:
    """`workers` threads, all started before this returns. Each binds itself to `cpus` (when
    given) and sets its torch intra-op thread count (when given; else torch's default).

    torch reads a thread's intra-op count once, lazily, from a process-wide default, and
    `torch.set_num_threads()` sets that default too. So each worker fixes its own count at
    start, and afterwards the default is set back to the calling thread's count: threads
    started later (another side's pool, the harness's own) get the default, not ours.
    """
    cpus = sorted(cpus) if cpus is not None else None
    callers_threads = torch.get_num_threads()
    started = threading.Barrier(workers + 1)

    def start() -> None:
        try:
            if cpus is not None:
                os.sched_setaffinity(0, cpus)  # on Linux, 0 is the calling thread only
            if intra_op_threads is not None:
                torch.set_num_threads(intra_op_threads)
            torch.get_num_threads()  # fixes this thread's count now, before anyone changes the default
        except BaseException:
            started.abort()
            raise
        started.wait()  # every worker waits here, so each submit() starts a new thread

    pool = ThreadPoolExecutor(workers, thread_name_prefix="feeder")
    futures = [pool.submit(start) for _ in range(workers)]
    try:
        started.wait()
    except threading.BrokenBarrierError:
        pool.shutdown()
        causes = [f.exception() for f in futures]  # the worker that failed; the rest were aborted
        cause = next((c for c in causes
                      if c is not None and not isinstance(c, threading.BrokenBarrierError)), None)
        raise RuntimeError(f"feeder_pool: a worker could not start: {cause!r}") from cause
    finally:
        if intra_op_threads is not None:
            torch.set_num_threads(callers_threads)  # the process-wide default, back as it was
    return pool
