"""Optimized: one stream per sequence, ordered by events instead of device syncs.

Each sequence's append and attention depend on nothing but that sequence's cache and the
step's inputs, so each gets its own stream. One event recorded on the caller's stream says
the inputs and the output buffer are ready, and each sequence's stream waits on it; one
event per sequence says its result is written, and the caller's stream waits on all of them
before returning. Within a stream the append still precedes the attention that reads it;
across streams nothing waits. The host enqueues the whole step without stopping, and
short sequences' attention overlaps the long ones' instead of queueing behind them.
"""
import torch

from ch11._stream_ordered_kv_cache_common import KvCacheBench
from core.benchmark import BenchContext


class StreamPerSequence(KvCacheBench):
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.streams = [torch.cuda.Stream() for _ in self.lengths]
        self.ready = torch.cuda.Event()
        self.done = [torch.cuda.Event() for _ in self.lengths]

    def run(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        caller = torch.cuda.current_stream()
        q = inputs[0]
        out = torch.empty_like(q)  # on the caller's stream, which waits for every writer below
        self.ready.record(caller)
        for i, stream in enumerate(self.streams):
            stream.wait_event(self.ready)
            with torch.cuda.stream(stream):
                out[i].copy_(self.step(i, *inputs))
                self.done[i].record(stream)
        for event in self.done:
            caller.wait_event(event)
        return out


get_benchmark = StreamPerSequence

if __name__ == "__main__":
    from core.single import main
    main(StreamPerSequence)
