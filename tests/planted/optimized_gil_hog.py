"""CHEAT (found by an adversarial audit, 2026-11-28): a thread started at import holds the
interpreter whenever this side is not in a call, that is while the baseline is timed. The
baseline's calls wait for the interpreter; this side's own calls do not (the thread backs
off while one runs). On the CPU the audit's version saw 300-3550x."""
import sys
import threading

from ._planted_common import FlagsItsCalls, hog_unless

# On a GPU the stream rule can fire first: the hog holds the interpreter between this side's
# calls too, so its batches' wall time is mostly in no sample (4xH200, 2026-11-28).
EXPECT = "its threads were busy|work escaped the timed stream"
TWIN = "optimized_thread_pool"  # its honest twin

_in_run = threading.Event()
threading.Thread(target=hog_unless, args=(_in_run,), daemon=True).start()
sys.setswitchinterval(0.02)  # once it holds the interpreter, it keeps it for 20 ms


class Honest(FlagsItsCalls):
    in_call = _in_run


get_benchmark = Honest
