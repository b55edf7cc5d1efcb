"""Stage `no_sync_logging` (this fix alone, on top of the baseline): log a device tensor (ch13).

`loss.item()` after every step waits for the step to finish, so the host cannot enqueue the
next step's kernels while the GPU runs this one: the GPU idles for the launch latency of
every step's first kernels. Here each step adds its mean loss to a device tensor, read (and
reset) every LOG_EVERY = 20 steps. Expected: small while the fp32 step is long; it grows as
the step shrinks and the Python-heavy optimizer loop becomes what the GPU waits for.
Identical arithmetic: the outputs match the baseline's exactly.
"""
from __future__ import annotations

from ch20._multiple_unoptimized_common import FP32_TOLERANCE, TrainingJob


class DeviceSideLogging(TrainingJob):
    sync_logging = False
    tolerance = FP32_TOLERANCE


get_benchmark = DeviceSideLogging

if __name__ == "__main__":
    DeviceSideLogging.main()
