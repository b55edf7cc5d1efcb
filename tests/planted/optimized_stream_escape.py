"""CHEAT: the work runs on a side stream that is never joined back, so the timing events
on the caller's stream see none of it."""
import torch

from ._planted_common import Streamed

# caught by the escape check, or first by the timed-output check when the copy of the kept
# sample's output reads it before the side stream has written it (seen on an H100)
EXPECT = "work escaped the timed stream|the timed output differs from the baseline"
# Streams share the GPU's hardware queues (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default): where the
# side stream lands on the caller's queue, the caller's events wait for the hidden work, which
# is then timed in full and gains nothing. tests/test_planted.py accepts that outcome at <= 1.1x.
TIMED_IN_FULL_OK = True


class NeverJoined(Streamed):
    def setup(self, ctx):
        self.side = torch.cuda.Stream()

    def run(self, inputs):
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            return self.compute(*inputs)


get_benchmark = NeverJoined
