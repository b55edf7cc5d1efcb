"""HONEST twin of timer: reads the clock (a deadline, a log line) without replacing it."""
import time

from ._planted_common import Planted

EXPECT = "pass"


class ReadsTheClock(Planted):
    def run(self, inputs):
        self.last_call = time.perf_counter()
        return self.compute(*inputs)


get_benchmark = ReadsTheClock
