"""core.busy on CPU: readings from the settling time are dropped, the rest averaged, and a
machine without NVML gives no busy share rather than a made-up one; the report's note."""
from __future__ import annotations

import time

from core.benchmark import Workload
from core.busy import SETTLE_S, busy_share
from core.record import ExampleResult, SideResult
from core.report import notes
from core.stats import summarize


def test_readings_from_before_the_window_settled_are_dropped():
    started = time.perf_counter()

    def read():  # 0% while the sample period still covers the idle time before the window
        return 0 if time.perf_counter() - started < SETTLE_S else 80
    calls = []
    share = busy_share(lambda: calls.append(1), lambda: None, read=read, window_s=0.6)
    assert share is not None and 79.5 < share <= 80, share
    assert len(calls) > 1


def test_no_nvml_means_no_busy_share():
    def read():
        raise RuntimeError("NVML not found")
    assert busy_share(lambda: None, lambda: None, read=read, window_s=0.4) is None


def test_the_report_names_both_sides_busy_share():
    def side(ms, busy):
        return SideResult(summarize([ms] * 12), Workload(units=64, unit_name="samples"),
                          gpu_busy_pct=busy)
    ex = ExampleResult(name="dataloader", id="ch05:dataloader", file="ch05/optimized_dataloader.py",
                       baseline=side(40.0, 31.0), timing=side(12.0, 94.4), speedup=3.3,
                       speedup_ci=(3.2, 3.4))
    line = [n for n in notes([ex]) if n.startswith("GPU BUSY")]
    assert line and "31% of the time with the baseline, 94% with the optimized side" in line[0]
    assert SideResult.from_dict(ex.timing.to_dict()).gpu_busy_pct == 94.4
