"""CHEAT (the issue's 109x case): many small kernels per call on a never-joined side
stream, so the launch queue fills and the host is slowed by back-pressure; v1's check,
which allowed 25% of the events' span, passed it."""
import torch

from ._planted_common import Streamed

EXPECT = "work escaped the timed stream"


class BackPressured(Streamed):
    def setup(self, ctx):
        self.side = torch.cuda.Stream()

    def run(self, inputs):
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            for _ in range(10):  # 600 launches a call: the launch queue fills within a batch
                out = self.compute(*inputs)
        return out


get_benchmark = BackPressured
