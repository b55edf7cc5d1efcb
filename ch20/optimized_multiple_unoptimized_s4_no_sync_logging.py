"""Stage 4 of 5 (cumulative): stage 3 (bf16, fused ops, fused AdamW) + the loss logged on
the device (ch11, ch13).

`loss.item()` after every step waits for the step to finish, so the host cannot enqueue the
next step's kernels while the GPU runs this one: the GPU idles for the launch latency of
every step's first kernels and for the host's Python between steps. Here each step adds its
mean loss to a device tensor, read (and reset) every LOG_EVERY = 20 steps. That idle time is
about the same per step whatever the step costs: a small share of the fp32 baseline's
call (1.01x for this fix alone on an H100 at commit 1976287, the one-fix design, when the
baseline's AdamW was the per-parameter loop; to be re-measured), expected to be a larger
share of the shorter step stages 1-3 leave.
Identical arithmetic to stage 3; bf16 throughout (BF16_TOLERANCE).
"""
from __future__ import annotations

from ch20._multiple_unoptimized_common import BF16_TOLERANCE
from ch20.optimized_multiple_unoptimized_s3_fused_optimizer import Stage3FusedOptimizer


class Stage4NoSyncLogging(Stage3FusedOptimizer):
    sync_logging = False
    tolerance = BF16_TOLERANCE


get_benchmark = Stage4NoSyncLogging

if __name__ == "__main__":
    from core.single import main
    main(Stage4NoSyncLogging)
