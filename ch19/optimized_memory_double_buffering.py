"""Optimized: double buffering; layer i+1's weights stream in on a copy stream while layer i computes.

Two device buffers per weight matrix (one extra layer of device memory, 64 MiB here). The
copy of layer i+1 is queued on a side stream, so the copy engine moves it while the SMs run
layer i's matmuls on the caller's stream. Two events per buffer order the streams, with no
host synchronization anywhere:
- `copied[b]`: the compute stream waits for it before the layer that reads buffer b;
- `consumed[b]`: recorded after the layer that read buffer b; the copy stream waits for it
  before refilling b (an event never recorded yet, as on the first call, waits for nothing).
Every copy is waited on by the caller's stream before run() returns, so no work escapes it.
Time per call ≈ copy_0 + Σ max(copy_{i+1}, compute_i) + compute_last.
"""
from __future__ import annotations

from contextlib import nullcontext

import torch

from ch19._memory_double_buffering_common import OffloadedStackBench, mlp_layer


class DoubleBuffered(OffloadedStackBench):
    def prepare(self) -> None:
        self.buffers = [self.device_buffers() for _ in range(2)]
        if self.ctx.is_cuda:
            self.copy_stream = torch.cuda.Stream()
            self.copied = [torch.cuda.Event() for _ in range(2)]
            self.consumed = [torch.cuda.Event() for _ in range(2)]

    def prefetch(self, layer: int) -> None:
        """Queue layer `layer`'s weights into buffer layer % 2, on the copy stream."""
        slot = layer % 2
        cuda = self.ctx.is_cuda
        with torch.cuda.stream(self.copy_stream) if cuda else nullcontext():
            if cuda:
                self.copy_stream.wait_event(self.consumed[slot])  # its last reader is done
            w1, w2 = self.buffers[slot]
            w1.copy_(self.host_w1[layer], non_blocking=True)
            w2.copy_(self.host_w2[layer], non_blocking=True)
            if cuda:
                self.copied[slot].record(self.copy_stream)

    def run(self, x: torch.Tensor) -> torch.Tensor:
        cuda = self.ctx.is_cuda
        compute = torch.cuda.current_stream() if cuda else None
        self.prefetch(0)
        for layer in range(len(self.host_w1)):
            slot = layer % 2
            if layer + 1 < len(self.host_w1):
                self.prefetch(layer + 1)  # overlaps this layer's matmuls
            if cuda:
                compute.wait_event(self.copied[slot])
            x = mlp_layer(x, *self.buffers[slot])
            if cuda:
                self.consumed[slot].record(compute)
        return x


get_benchmark = DoubleBuffered

if __name__ == "__main__":
    from core.single import main
    main(DoubleBuffered)
