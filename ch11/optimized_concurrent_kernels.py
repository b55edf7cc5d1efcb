"""Optimized: the five independent kernels on five streams.

Each stream first waits for the caller's stream (the inputs are ready), then runs one
kernel; the caller waits for all five before returning. Kernels on different streams may run
at the same time: the block scheduler hands the SMs a small kernel leaves idle to the next
one, and one kernel's tail overlaps another's start. Each output is allocated on its
kernel's stream and handed to the caller's with record_stream, so the caching allocator does
not reuse its memory before the caller is done with it.
"""
import torch

from ch11._concurrent_kernels_common import ConcurrentKernelsBench, Inputs
from core.benchmark import BenchContext


class FiveStreams(ConcurrentKernelsBench):
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.streams = [torch.cuda.Stream() for _ in range(5)]

    def run(self, x: Inputs) -> tuple[torch.Tensor, ...]:
        caller = torch.cuda.current_stream()
        outs = []
        for stream, kernel in zip(self.streams, self.kernels(x)):
            stream.wait_stream(caller)
            with torch.cuda.stream(stream):
                outs.append(kernel())
        for stream, out in zip(self.streams, outs):
            caller.wait_stream(stream)
            out.record_stream(caller)
        return tuple(outs)


get_benchmark = FiveStreams

if __name__ == "__main__":
    from core.single import main
    main(FiveStreams)
