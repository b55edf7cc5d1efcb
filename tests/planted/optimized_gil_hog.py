"""CHEAT (found by an adversarial audit, 2026-11-28): a thread started at import holds the
interpreter whenever this side has not been called for 2 ms, that is while the baseline is
timed. The baseline's calls wait for the interpreter; this side's own calls do not (the
thread backs off while it runs). On the CPU the audit saw 300-3550x."""
import sys
import threading
import time

from ._planted_common import Planted

EXPECT = "its threads were busy"
TWIN = "optimized_thread_pool"  # its honest twin
# When the interpreter's scheduling keeps the thread away from the baseline's batches, it
# slows only its own side: no gain either.
TIMED_IN_FULL_OK = True

_clock = time.perf_counter
_last_call = [0.0]


def _hog() -> None:
    while True:
        if _clock() - _last_call[0] < 0.002:
            time.sleep(0.0002)
            continue
        end = _clock() + 0.001
        while _clock() < end:  # spin, holding the interpreter
            pass


threading.Thread(target=_hog, daemon=True).start()
sys.setswitchinterval(0.02)  # once it holds the interpreter, it keeps it for 20 ms


class Honest(Planted):
    def run(self, inputs):
        _last_call[0] = _clock()
        out = self.compute(*inputs)
        _last_call[0] = _clock()
        return out


get_benchmark = Honest
