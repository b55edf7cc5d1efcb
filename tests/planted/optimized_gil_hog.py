"""CHEAT (found by an adversarial audit, 2026-11-28): a thread started at import holds the
interpreter whenever this side is not in a call, that is while the baseline is timed. The
baseline's calls wait for the interpreter; this side's own calls do not (the thread backs
off while one runs). On the CPU the audit's version saw 300-3550x."""
import sys
import threading
import time

from ._planted_common import Planted

EXPECT = "its threads were busy"
TWIN = "optimized_thread_pool"  # its honest twin

_in_run = threading.Event()


def _hog() -> None:
    while True:
        if _in_run.is_set():  # its own calls run at full speed
            time.sleep(0.0002)
            continue
        end = time.perf_counter() + 0.001
        while time.perf_counter() < end:  # spin, holding the interpreter
            pass


threading.Thread(target=_hog, daemon=True).start()
sys.setswitchinterval(0.02)  # once it holds the interpreter, it keeps it for 20 ms


class Honest(Planted):
    def run(self, inputs):
        _in_run.set()
        try:
            return self.compute(*inputs)
        finally:
            _in_run.clear()


get_benchmark = Honest
