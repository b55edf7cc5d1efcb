"""CHEAT: gil_hog's thread started with `_thread.start_new_thread`, which threading.enumerate()
never lists, so the thread rule (core.threads) would not count its time. Refused before it
runs: the source check names the call (core.sourcecheck)."""
import _thread
import threading

from ._planted_common import FlagsItsCalls, hog_unless

EXPECT = "starts a thread outside threading.Thread"
TWIN = "optimized_thread_pool"  # its honest twin

_in_run = threading.Event()
_thread.start_new_thread(hog_unless, (_in_run,))


class Honest(FlagsItsCalls):
    in_call = _in_run


get_benchmark = Honest
