"""CHEAT (the issue's 109x case): many small kernels per call on a never-joined side
stream, so the launch queue fills and the host is slowed by back-pressure; v1's check,
which allowed 25% of the events' span, passed it. Now either rule catches it: the escape
check (wall time no sample accounts for), or — when the back-pressure stretched the samples
so far that they cover the wall time — the timed-output check (the captured output is read
on the caller's stream before the side stream wrote it)."""
import torch

from ._planted_common import Streamed

EXPECT = "work escaped the timed stream|timed output differs from the baseline"
TIMED_IN_FULL_OK = True  # see optimized_stream_escape.py


class BackPressured(Streamed):
    def setup(self, ctx):
        self.side = torch.cuda.Stream()

    def run(self, inputs):
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            for _ in range(10):  # 240 launches a call: the launch queue fills within a batch
                out = self.compute(*inputs)
        return out


get_benchmark = BackPressured
