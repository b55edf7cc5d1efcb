"""Optimized: a three-stage pipeline on three streams, copy in / compute / copy out, ordered by
events.

Chunk i is copied in on `load`, computed on `compute` once its copy is done, and copied out
on `store` once its compute is done; meanwhile chunk i+1 is already coming in and chunk i-1
going out. The H2D engine, the SMs and the D2H engine work at the same time, so after the
first chunk fills the pipeline the time approaches max(copy in, compute, copy out).

Device buffers are a ring of SLOTS = 3 per direction, so two more waits keep it safe: the copy
into a slot waits until the compute that last read it is done, and the compute into an output
slot waits until the copy out that last read it is done. Events are re-recorded each chunk; a
`wait_event` waits for the record enqueued last before it.
"""
import torch

from ch11._streams_common import SLOTS, StreamsBench, mlp
from core.benchmark import BenchContext


class ThreeStreamPipeline(StreamsBench):
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.load, self.compute, self.store = (torch.cuda.Stream() for _ in range(3))
        self.loaded = [torch.cuda.Event() for _ in range(SLOTS)]  # slot's input is on the GPU
        self.computed = [torch.cuda.Event() for _ in range(SLOTS)]  # slot's output is written
        self.stored = [torch.cuda.Event() for _ in range(SLOTS)]  # slot's output is in host memory

    def run(self, x: torch.Tensor) -> torch.Tensor:
        caller = torch.cuda.current_stream()
        for stream in (self.load, self.compute, self.store):
            stream.wait_stream(caller)  # nothing starts before what the caller enqueued
        for i, (start, stop) in enumerate(self.bounds):
            d_in, d_out = self.slot(i, start, stop)
            k, reused = i % SLOTS, i >= SLOTS
            with torch.cuda.stream(self.load):
                if reused:
                    self.load.wait_event(self.computed[k])  # chunk i - SLOTS has read d_in
                d_in.copy_(x[start:stop], non_blocking=True)
                self.loaded[k].record()
            with torch.cuda.stream(self.compute):
                self.compute.wait_event(self.loaded[k])
                if reused:
                    self.compute.wait_event(self.stored[k])  # chunk i - SLOTS has left d_out
                mlp(d_in, self.w1, self.w2, d_out)
                self.computed[k].record()
            with torch.cuda.stream(self.store):
                self.store.wait_event(self.computed[k])
                self.out[start:stop].copy_(d_out, non_blocking=True)
                self.stored[k].record()
        for stream in (self.load, self.compute, self.store):
            caller.wait_stream(stream)  # the caller's timing sees every stage
        caller.synchronize()  # the answer is in host memory: wait for it
        return self.out


get_benchmark = ThreeStreamPipeline

if __name__ == "__main__":
    from core.single import main
    main(ThreeStreamPipeline)
