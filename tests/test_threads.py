"""core.threads: which side started each thread, and a variant's threads at work while the
other sides are timed (the planted `gil_hog` pair runs the whole path in tests/test_planted.py)."""
from __future__ import annotations

import threading
import time

from core.threads import OUTSIDE_CPU_FLOOR_S, OUTSIDE_CPU_SHARE, OutsideWork, ThreadLedger, thread_busy_s


def test_a_thread_belongs_to_the_side_that_was_running_when_it_appeared():
    ledger = ThreadLedger()  # this process's threads so far: the harness's
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        ledger.claim("variant")
        ledger.claim("later")  # a second claim takes nothing already owned
        assert ledger.owner[worker.ident] == "variant"
        assert ledger.owner[threading.main_thread().ident] == "harness"
    finally:
        release.set()
        worker.join()


def test_a_thread_belongs_to_its_starters_side_whenever_it_appears():
    """A variant's thread starts another while the baseline is being timed: the new one is
    the variant's (by its starter), and a thread the main thread starts is the running side's."""
    ledger = ThreadLedger()
    release, handed_off = threading.Event(), threading.Event()
    grandchild: list[threading.Thread] = []

    def variants_thread() -> None:
        handed_off.wait()  # until the baseline's batch, below
        child = threading.Thread(target=release.wait)
        child.start()
        grandchild.append(child)
        release.wait()

    watcher = threading.Thread(target=variants_thread)
    watcher.start()
    ledger.claim("variant")  # the variant's import started it
    handed_off.set()  # ... now the baseline is timed, and the watcher starts a thread
    deadline = time.monotonic() + 60
    while not grandchild and time.monotonic() < deadline:
        time.sleep(0.001)
    by_main = threading.Thread(target=release.wait)
    by_main.start()
    try:
        ledger.claim("baseline")
        assert ledger.owner[grandchild[0].ident] == "variant"
        assert ledger.owner[by_main.ident] == "baseline"  # started by the harness's thread
    finally:
        release.set()
        for thread in (watcher, by_main, *grandchild):
            thread.join()


def test_a_threads_busy_time_counts_its_own_work_only():
    """Per-thread schedstat exists on Linux (the CI machine and the GPU machines)."""
    main = threading.main_thread()
    assert thread_busy_s(main) is not None
    started, done = threading.Event(), threading.Event()
    waiter = threading.Thread(target=lambda: (started.set(), done.wait()))
    waiter.start()
    assert started.wait(timeout=60)
    deadline, last = time.monotonic() + 30, None
    while time.monotonic() < deadline:  # poll until it is blocked: its busy time stops moving
        now = thread_busy_s(waiter)
        if now == last:
            break
        last = now
        time.sleep(0.01)
    before_main, before_waiter = thread_busy_s(main), thread_busy_s(waiter)
    sum(i * i for i in range(300_000))  # the main thread's work
    main_used, waiter_used = thread_busy_s(main) - before_main, thread_busy_s(waiter) - before_waiter
    done.set()
    waiter.join()
    assert main_used > 0.001 and waiter_used < main_used / 10  # a waiting thread uses ~nothing


class _FakeLedger:
    """CPU seconds by side, set by the test between batches."""

    def __init__(self) -> None:
        self.now: dict[str, float] = {}
        self.claimed: list[str] = []

    def cpu_s(self) -> dict[str, float]:
        return dict(self.now)

    def claim(self, side: str) -> None:
        self.claimed.append(side)


def _timing(cpu_during_baseline: float, wall_s: float) -> OutsideWork:
    """A baseline batch of `wall_s`, then the hog's own batch of `wall_s`, on a fake clock."""
    ledger, clock = _FakeLedger(), [0.0]
    work = OutsideWork(ledger, clock=lambda: clock[0])
    work.before_batch()
    clock[0] += wall_s
    ledger.now = {"hog": cpu_during_baseline, "baseline": wall_s}
    work.after_batch("baseline", wall_s, ["hog", "pool"])
    work.before_batch()
    clock[0] += wall_s
    ledger.now["hog"] += wall_s  # its own batch: its own business
    work.after_batch("hog", wall_s, ["hog", "pool"])
    work.finish(["hog", "pool"])
    assert ledger.claimed == ["baseline", "hog"]
    return work


def test_a_variant_whose_threads_work_while_the_baseline_is_timed_fails():
    wall = 1.0
    busy = _timing(cpu_during_baseline=0.5, wall_s=wall)
    assert busy.cpu_s["hog"] == 0.5 and busy.wall_s["hog"] == wall  # outside its own batch
    assert "its threads were busy (running or ready to run) for 500 ms" in busy.problem("hog")
    assert busy.problem("pool") is None  # no threads of its own at work
    idle = _timing(cpu_during_baseline=OUTSIDE_CPU_SHARE * wall * 0.9, wall_s=wall)
    assert idle.problem("hog") is None  # a little bookkeeping between calls is allowed
    short = _timing(cpu_during_baseline=OUTSIDE_CPU_FLOOR_S * 0.9, wall_s=0.01)
    assert short.problem("hog") is None  # below a few clock ticks: nothing can be told


def test_a_pair_that_puts_back_thread_start_is_caught():
    """The starter record is a patched Thread.start; the Guard keeps a pair from undoing it."""
    import core.threads  # noqa: F401 - the patch
    from core.integrity import Guard

    patched = threading.Thread.start
    assert getattr(patched, "records_starter", False)
    guard = Guard()
    threading.Thread.start = patched.__wrapped__  # what a pair hiding its threads' starter does
    try:
        assert "threading.Thread.start" in (guard.problem() or "")
    finally:
        threading.Thread.start = patched
    assert guard.problem() is None
