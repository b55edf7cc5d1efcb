"""The overlapped schedule both `pipeline_sequential` stems' optimized sides run.

Three streams, one per kind of engine: `h2d` (copy engine, host to device), the current
stream (the SMs: preprocess, model, postprocess) and `d2h` (the other copy engine, device to
host). Batch i's copy waits only for the device buffer it lands in to be free (two buffers,
alternating: compute of batch i-2 has read it); compute of batch i waits for its copy;
batch i's D2H waits for its compute. So while the SMs run batch i, one copy engine brings
batch i+1 and the other returns batch i-1. Results land in pinned host buffers (a copy into
pageable memory cannot run asynchronously); one sync at the end hands them to the caller.

On a CPU run there are no streams: the same loop runs in order (events and waits are no-ops).
"""
from __future__ import annotations

from contextlib import nullcontext

import torch

from ch20._pipeline_sequential_common import TOP_K, InferencePipeline

SLOTS = 2  # device input buffers: copy one while the SMs read the other


class OverlappedPipeline(InferencePipeline):
    def prepare(self) -> None:
        c, cuda = self.cfg, self.ctx.is_cuda
        self.slots = [torch.empty(c.batch, 3, c.size, c.size, dtype=torch.uint8, device=self.device)
                      for _ in range(SLOTS)]
        self.h2d = torch.cuda.Stream() if cuda else None
        self.d2h = torch.cuda.Stream() if cuda else None
        self.loaded = [torch.cuda.Event() if cuda else None for _ in range(SLOTS)]
        self.consumed = [torch.cuda.Event() if cuda else None for _ in range(SLOTS)]

    def on(self, stream):
        return torch.cuda.stream(stream) if stream is not None else nullcontext()

    def run(self, frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        c, cuda = self.cfg, self.ctx.is_cuda
        compute = torch.cuda.current_stream() if cuda else None
        probs = torch.empty(c.batches, c.batch, TOP_K, pin_memory=cuda)
        ids = torch.empty(c.batches, c.batch, TOP_K, dtype=torch.long, pin_memory=cuda)
        for i, batch in enumerate(frames):
            slot = i % SLOTS
            with self.on(self.h2d):
                if cuda:
                    if i >= SLOTS:  # compute of batch i - SLOTS has read this buffer
                        self.h2d.wait_event(self.consumed[slot])
                    else:  # the buffer was last read by the previous call's compute
                        self.h2d.wait_stream(compute)
                self.slots[slot].copy_(batch, non_blocking=cuda)
                if cuda:
                    self.loaded[slot].record()
            if cuda:
                compute.wait_event(self.loaded[slot])
            p, k = self.infer(self.slots[slot])
            if cuda:
                self.consumed[slot].record(compute)
                self.d2h.wait_stream(compute)
            with self.on(self.d2h):
                probs[i].copy_(p, non_blocking=cuda)
                ids[i].copy_(k, non_blocking=cuda)
            if cuda:  # p and k were made on the compute stream and are read on d2h
                p.record_stream(self.d2h)
                k.record_stream(self.d2h)
        if cuda:
            compute.wait_stream(self.d2h)  # the harness's events see every copy
            compute.synchronize()  # the caller reads the results on the host
        return probs.flatten(0, 1), ids.flatten(0, 1)
