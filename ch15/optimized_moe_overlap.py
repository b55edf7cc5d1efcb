"""The shared expert on a side stream, overlapped with the routed experts.

The side stream first waits for the current stream (x is ready there), runs the shared
expert's two GEMMs while the current stream runs the router, the sort and the grouped GEMMs,
and the current stream waits for the side stream before the final add. The shared output was
allocated on the side stream and is consumed on the current one: `record_stream` tells the
caching allocator not to reuse its memory before the current stream is done with it. run()
returns only after the join, so the harness's events on the current stream cover all work.
"""
import torch

from ch15._moe_overlap_common import SharedExpertMoeBench


class SideStreamSharedExpert(SharedExpertMoeBench):
    description = "MoE + shared expert: shared expert on a side stream, overlapped with the routed experts"
    negative_result = ("0.91x on an H100 at 1024 tokens: running the shared expert on a side "
                       "stream cost more than the overlap hid")

    def setup(self, ctx):
        super().setup(ctx)
        self.side = torch.cuda.Stream() if ctx.is_cuda else None

    def run(self, x):
        if self.side is None:  # CPU: no streams, the same work in order
            return self.routed(x) + self.shared(x)
        current = torch.cuda.current_stream()
        self.side.wait_stream(current)  # x (and anything before run) is ready
        with torch.cuda.stream(self.side):
            shared = self.shared(x)
        routed = self.routed(x)
        current.wait_stream(self.side)  # join before anything reads `shared` or run returns
        shared.record_stream(current)
        return routed + shared


get_benchmark = SideStreamSharedExpert

if __name__ == "__main__":
    from core.single import main
    main(SideStreamSharedExpert)
