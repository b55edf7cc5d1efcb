"""Which side started each thread of the child, and how long its threads were busy while other sides
were timed.

A variant can start a thread (at import, in setup() or in a call) that keeps running while
the baseline is timed: it competes with the baseline for the interpreter and the cores and
slows it (an adversarial audit's thread held the GIL whenever its own side was idle: the
baseline's median went from 0.3 to 46 ms, a 3550x "speedup"), or it does its own side's work
outside its timed calls. Honest thread pools (ch03's feeders, a DataLoader's pin-memory
thread) wait, blocked, while another side runs. The ledger reads how long each thread was busy
(running or ready to run: Linux's /proc schedstat, else its CPU clock); where neither can be
read it sees nothing and judges nothing.

A thread started by another thread belongs to its starter's side, whenever it starts: a
variant's thread cannot hand its work to a new thread that appears during the baseline's
batch and so counts as the baseline's. Thread.start records each thread's starter; it is
patched when this module is imported, before the Guard's snapshot (core.integrity imports
this module first), so a pair that puts the original back is caught.
"""
from __future__ import annotations

import functools
import threading
import time
from typing import Callable

# Thread ident -> ident of the thread that started it (recorded by the patched Thread.start).
STARTERS: dict[int, int] = {}


def _record_starters() -> None:
    start = threading.Thread.start
    if getattr(start, "records_starter", False):
        return

    @functools.wraps(start)
    def recording_start(thread: threading.Thread) -> None:
        starter = threading.get_ident()
        start(thread)
        if thread.ident is not None:
            STARTERS[thread.ident] = starter

    recording_start.records_starter = True  # type: ignore[attr-defined]
    threading.Thread.start = recording_start  # type: ignore[method-assign]


_record_starters()

# A variant whose threads were busy for more than this share of the wall time other sides
# were timed in, and more than the floor, kept working outside its own calls.
OUTSIDE_CPU_SHARE = 0.1
OUTSIDE_CPU_FLOOR_S = 0.002


def thread_busy_s(thread: threading.Thread) -> float | None:
    """Seconds one live thread of this process has been busy: running, or ready to run and
    waiting for a core (Linux's /proc schedstat). A thread that holds the interpreter while
    the OS has it off a core still keeps other threads waiting, so its CPU time alone would
    undercount it on a loaded host. Elsewhere its CPU clock; None where neither is readable."""
    if thread.native_id is not None:
        try:
            with open(f"/proc/self/task/{thread.native_id}/schedstat") as handle:
                ran_ns, waited_ns = (int(v) for v in handle.read().split()[:2])
            return (ran_ns + waited_ns) / 1e9
        except (OSError, ValueError):
            pass
    if thread.ident is None or not hasattr(time, "pthread_getcpuclockid"):
        return None
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except (OSError, OverflowError):
        return None


class ThreadLedger:
    """Threads by the side that was loading, setting up or running when they appeared."""

    def __init__(self) -> None:
        self.owner: dict[int, str] = {}
        self.claim("harness")  # the child's own, before any of the pair's code runs

    def claim(self, side: str) -> None:
        """Every live thread not seen before belongs to its starter's side, or else (started
        by the harness's own threads, or by a way Thread.start does not see) to `side`."""
        for thread in threading.enumerate():
            if thread.ident is not None and thread.ident not in self.owner:
                self.owner[thread.ident] = self._starters_side(thread.ident) or side

    def _starters_side(self, ident: int) -> str | None:
        """The side of the nearest starter up the chain that has one (not the harness)."""
        starter, hops = STARTERS.get(ident), 0
        while starter is not None and starter != ident and hops < 64:
            owner = self.owner.get(starter)
            if owner is not None:
                return None if owner == "harness" else owner
            ident, starter, hops = starter, STARTERS.get(starter), hops + 1
        return None

    def cpu_s(self) -> dict[str, float]:
        """CPU seconds so far of each side's live threads."""
        used: dict[str, float] = {}
        for thread in threading.enumerate():
            side = self.owner.get(thread.ident or -1)
            seconds = thread_busy_s(thread) if side else None
            if seconds is not None:
                used[side] = used.get(side, 0.0) + seconds
        return used


class OutsideWork:
    """Per side: how long its threads were busy while the side was not in its own timed batch
    (other sides' batches and the harness's work between them), and how long that was. Counted
    over the whole timing, not batch by batch: a busy thread's count is only brought up to date
    at the OS scheduler's ticks, which a short batch can fall between."""

    def __init__(self, ledger: ThreadLedger, clock: Callable[[], float] = time.perf_counter) -> None:
        self.ledger, self.clock = ledger, clock
        self.cpu_s: dict[str, float] = {}  # busy outside its own batches (filled by finish())
        self.wall_s: dict[str, float] = {}  # time outside its own batches
        self._own_busy: dict[str, float] = {}
        self._own_wall: dict[str, float] = {}
        self._first: dict[str, float] | None = None
        self._started = 0.0
        self._before: dict[str, float] = {}

    def before_batch(self) -> None:
        self._before = self.ledger.cpu_s()
        if self._first is None:
            self._first, self._started = self._before, self.clock()

    def after_batch(self, timed_side: str, wall_s: float, sides: list[str]) -> None:
        now = self.ledger.cpu_s()
        self._own_busy[timed_side] = (self._own_busy.get(timed_side, 0.0)
                                      + now.get(timed_side, 0.0) - self._before.get(timed_side, 0.0))
        self._own_wall[timed_side] = self._own_wall.get(timed_side, 0.0) + wall_s
        self.ledger.claim(timed_side)  # threads its calls started are its own

    def finish(self, sides: list[str]) -> None:
        """After the timing: each side's busy time and wall time outside its own batches."""
        if self._first is None:
            return
        now, elapsed = self.ledger.cpu_s(), self.clock() - self._started
        for side in sides:
            busy = now.get(side, 0.0) - self._first.get(side, 0.0) - self._own_busy.get(side, 0.0)
            self.cpu_s[side] = max(0.0, busy)
            self.wall_s[side] = max(0.0, elapsed - self._own_wall.get(side, 0.0))

    def problem(self, side: str) -> str | None:
        used, wall = self.cpu_s.get(side, 0.0), self.wall_s.get(side, 0.0)
        if used <= max(OUTSIDE_CPU_FLOOR_S, OUTSIDE_CPU_SHARE * wall):
            return None
        return (f"its threads were busy (running or ready to run) for {used * 1e3:.0f} ms of the "
                f"{wall * 1e3:.0f} ms the timing spent outside its own batches: a side's work happens in its own calls, "
                f"and a thread that keeps running slows the sides it competes with")
