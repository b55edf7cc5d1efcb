"""The GPU's busy share while a side runs, for pairs whose point is keeping the GPU fed.

A data-loading pair can be faster and still leave the GPU idle half the time, or be no
faster because the GPU was already the bottleneck; the busy share says which. A pair
declares `report_gpu_busy = True`; after timing, each side runs back to back for WINDOW_S
seconds while a thread reads `torch.cuda.utilization()` (NVML: the share of the driver's
last sample period, 1/6 s to 1 s, in which a kernel was running) every POLL_S. Readings from
the first SETTLE_S are dropped (their sample period began before the window), and the rest
are averaged. Copies alone do not count as busy: NVML counts kernels.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

WINDOW_S = 2.0
POLL_S = 0.02
SETTLE_S = 0.3


def busy_share(call: Callable[[], Any], sync: Callable[[], None],
               read: Callable[[], int | float] | None = None, window_s: float = WINDOW_S,
               clock: Callable[[], float] = time.perf_counter) -> float | None:
    """Percent of time the GPU ran kernels while `call` ran back to back for `window_s`
    (None when no reading fell inside the window, or NVML cannot be read)."""
    if read is None:
        import torch

        read = torch.cuda.utilization
    readings: list[tuple[float, float]] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            try:
                readings.append((clock(), float(read())))
            except Exception:  # noqa: BLE001 - no NVML (or no permission): no busy share
                return
            stop.wait(POLL_S)

    call()
    sync()
    started = clock()
    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    while clock() - started < window_s:
        call()
    sync()
    stop.set()
    thread.join()
    settled = [value for stamp, value in readings if stamp - started >= SETTLE_S]
    return sum(settled) / len(settled) if settled else None


def measure_busy(session: Any) -> None:
    """Each side's GPU busy share (core.busy), sides in order on every rank; each rank
    reports its own GPU and rank 0 keeps the lowest (the GPU left waiting most)."""
    from core.benchmark import option
    from core.inputs import clone

    mine: dict[str, float | None] = {}
    for name in ["baseline", *session.sides]:
        bench = session.bench(name)
        inplace = option(bench, "inplace", False)
        mine[name] = busy_share(
            lambda: bench.run(clone(session.timed_inputs) if inplace else session.timed_inputs),
            session.sync)
    session.check_guard("while measuring the GPU's busy share")
    every = session.ranks.all(mine) if session.ranks.distributed else [mine]
    for name, side in session.side_results().items():
        values = [r[name] for r in every if r.get(name) is not None]
        if values:
            side.gpu_busy_pct = min(values)
