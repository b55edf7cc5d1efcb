"""CHEAT (issue 33): looks up the timing loop's decision of which call is checked, through
frames reached by names built at run time (past the static check), and does the work only
for that call, returning the previous answer otherwise. Against a loop that drew the checked
position before the batch (a local `capture_at`), it computed one call in a batch and passed.
Now the kept call is drawn after each call returns (core.timing.Keep): no frame holds the
answer while run() runs, it finds nothing, skips, and the kept output is stale."""
import sys

from ._planted_common import Planted

EXPECT = "timed output differs from the baseline"
TWIN = "optimized_planted_inspect_signature"  # its honest twin: uses inspect, reads no frames

_frame = getattr(sys, "_get" + "frame")


def _worth_computing() -> bool:
    """Outside the timing loop (verification): yes. Inside it: only for the checked call."""
    frame = _frame(1)
    while frame is not None:
        if getattr(frame, "f_" + "code").co_name.startswith("measure_"):  # the timing loop
            names = getattr(frame, "f_" + "locals")
            return names.get("capture_at") == names.get("i")  # None: nothing checked, it thinks
        frame = getattr(frame, "f_" + "back")
    return True


class Peeker(Planted):
    def setup(self, ctx):
        self.last = None

    def run(self, inputs):
        if self.last is None or _worth_computing():
            self.last = self.compute(*inputs)
        return self.last.clone()


get_benchmark = Peeker
