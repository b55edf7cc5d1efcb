"""A reader thread prepares the next steps into a pinned double buffer and copies them on a
side stream, while the training thread only launches the forward passes.

- The reader thread (started in setup(), idle between calls) reads, tokenizes and packs each
  step of the plan run() hands it, writing the rows straight into one of two pinned host
  buffers. File reads and NumPy's loops release the GIL, so this runs beside the training
  thread's kernel launches.
- Pinned memory lets the copy to the GPU run asynchronously on the DMA engine. It is
  enqueued on a copy stream, so it overlaps the forward pass of the previous step instead of
  queueing behind it.
- Events order the two streams: the forward pass of a step waits for its rows' copy
  (`copied`), and a device buffer is only overwritten once the forward pass that read it is
  done (`consumed`). Before the reader refills a pinned buffer it waits on the host for the
  copy out of it (`copied[slot].synchronize()`). Every copy is joined to the current stream
  before the step that reads it, so all of a call's work is on that stream when run()
  returns.

Two buffers suffice: the reader stays at most two steps ahead. On a CPU (CI) there are no
streams or pinned memory; the reader thread alone is exercised.
"""
from __future__ import annotations

import queue
import threading

import torch

from ch05._token_pipeline_common import TokenPipeline
from core.benchmark import BenchContext


class PrefetchedPipeline(TokenPipeline):
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        shape, cuda = (self.cfg.batch, self.cfg.seq + 1), ctx.is_cuda
        self.host = [torch.empty(shape, dtype=torch.int64, pin_memory=cuda) for _ in range(2)]
        self.gpu = [torch.empty(shape, dtype=torch.int64, device=ctx.device) for _ in range(2)]
        if cuda:
            self.copy_stream = torch.cuda.Stream()
            self.copied = [torch.cuda.Event() for _ in range(2)]
            self.consumed = [torch.cuda.Event() for _ in range(2)]
            self.cuda_index = torch.cuda.current_device()
        self.requests: queue.Queue = queue.Queue()  # one plan per run(); None stops the thread
        self.ready: queue.Queue = queue.Queue()  # slots whose rows are on their way to the GPU
        self.free: queue.Queue = queue.Queue()  # slots the reader may fill
        for slot in range(2):
            self.free.put(slot)
        self.reader = threading.Thread(target=self.read_ahead, name="token-reader", daemon=True)
        self.reader.start()

    def read_ahead(self) -> None:
        if self.ctx.is_cuda:
            torch.cuda.set_device(self.cuda_index)
        while (plan := self.requests.get()) is not None:
            try:
                for documents in plan:
                    slot = self.free.get()
                    self.stage(slot, documents)
                    self.ready.put(slot)
            except BaseException as exc:  # noqa: BLE001 - handed to run(), which raises it
                self.ready.put(exc)

    def stage(self, slot: int, documents: list[int]) -> None:
        """Rows of one step into host buffer `slot`, then on their way to device buffer `slot`."""
        if not self.ctx.is_cuda:  # CI: no streams; a plain copy
            self.load_step(documents, out=self.host[slot].numpy())
            self.gpu[slot].copy_(self.host[slot])
            return
        self.copied[slot].synchronize()  # the last copy out of this pinned buffer is done
        self.load_step(documents, out=self.host[slot].numpy())
        with torch.cuda.stream(self.copy_stream):
            self.copy_stream.wait_event(self.consumed[slot])  # its last reader has finished
            self.gpu[slot].copy_(self.host[slot], non_blocking=True)
            self.copied[slot].record(self.copy_stream)

    def run(self, plan: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.requests.put(plan.tolist())
        losses, checksums = [], []
        for _ in range(self.cfg.steps):
            slot = self.ready.get()
            if isinstance(slot, BaseException):
                raise slot
            if self.ctx.is_cuda:
                torch.cuda.current_stream().wait_event(self.copied[slot])
            step_losses, checksum = self.step(self.gpu[slot])
            if self.ctx.is_cuda:
                self.consumed[slot].record(torch.cuda.current_stream())
            self.free.put(slot)
            losses.append(step_losses)
            checksums.append(checksum)
        return torch.stack(losses), torch.stack(checksums)

    def teardown(self) -> None:
        if hasattr(self, "reader"):
            self.requests.put(None)
            self.reader.join(timeout=10)
        super().teardown()


get_benchmark = PrefetchedPipeline

if __name__ == "__main__":
    from core.single import main
    main(PrefetchedPipeline)
