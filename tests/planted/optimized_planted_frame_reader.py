"""CHEAT (invented): walks up the call stack to the timing loop and reads which sample's
output will be kept for the check (`capture_at`); it computes only that one and returns the
kept answer otherwise. Refused before it runs: no honest pair reads frames."""
import sys

from ._planted_common import Planted

EXPECT = "refused before running"
TWIN = "optimized_planted_inspect_signature"  # its honest twin


class FrameReader(Planted):
    calls = 0
    answer = None

    def run(self, inputs):
        frame, checked = sys._getframe(1), True
        while frame is not None:
            if "capture_at" in frame.f_locals and "i" in frame.f_locals:
                checked = frame.f_locals["i"] == frame.f_locals["capture_at"]
                break
            frame = frame.f_back
        if checked or self.answer is None:
            self.answer = self.compute(*inputs)
        return self.answer


get_benchmark = FrameReader
