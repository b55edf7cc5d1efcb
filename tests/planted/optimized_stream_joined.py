"""HONEST twin: the same side stream, joined back to the caller's stream before returning."""
import torch

from ._planted_common import Streamed

EXPECT = "pass"


class Joined(Streamed):
    def setup(self, ctx):
        self.side = torch.cuda.Stream()

    def run(self, inputs):
        caller = torch.cuda.current_stream()
        self.side.wait_stream(caller)
        with torch.cuda.stream(self.side):
            out = self.compute(*inputs)
        caller.wait_stream(self.side)
        out.record_stream(caller)
        return out


get_benchmark = Joined
