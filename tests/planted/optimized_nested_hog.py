"""CHEAT (the gap the 2026-11-28 audit's report named): gil_hog's thread, but started by a
watcher thread at the moment the baseline is in a call, so that it appears during the
baseline's batch (or the harness's work before it) and would be counted as the baseline's.
The watcher (started at import, asleep between looks) waits until it has been called and
this side has been out of a call for 2 ms (its batch is over), and starts the hog then. Caught: a thread belongs to the side of the thread that
started it (core.threads)."""
import sys
import threading
import time

from ._planted_common import FlagsItsCalls, hog_unless

EXPECT = "its threads were busy"
TWIN = "optimized_thread_pool"  # its honest twin

_in_run = threading.Event()
_calls = [0]


def _watch() -> None:
    idle_since = None
    while True:  # until it has been called and then out of a call for 2 ms: its batch is
        time.sleep(0.0005)  # over, and the next batch (or the checks before it) is another side's
        if _in_run.is_set() or not _calls[0]:
            idle_since = None
        elif idle_since is None:
            idle_since = time.perf_counter()
        elif time.perf_counter() - idle_since > 0.002:
            break
    threading.Thread(target=hog_unless, args=(_in_run,), daemon=True).start()
    sys.setswitchinterval(0.02)  # once it holds the interpreter, it keeps it for 20 ms


threading.Thread(target=_watch, daemon=True).start()


class Honest(FlagsItsCalls):
    in_call = _in_run

    def run(self, inputs):
        _calls[0] += 1
        return super().run(inputs)


get_benchmark = Honest
