"""Stage `loader` (this fix alone, on top of the baseline): workers, pinned memory, non_blocking.

`num_workers` processes pack batches ahead of the step (persistent: started once, in
setup()), `pin_memory=True` puts each batch in page-locked memory and `.to(non_blocking=True)`
enqueues its copy and returns. Expected: small here. A step's batch is 8 x 513 int64 tokens
(33 KB), packed in well under a millisecond, against a fp32 step of tens of milliseconds; the
fix matters once the other fixes shrink the step (the full variant) or where samples are
costly to produce (ch05's image pipeline).
"""
from __future__ import annotations

from ch20._multiple_unoptimized_common import FP32_TOLERANCE, WORKERS, TrainingJob


class LoaderFixed(TrainingJob):
    loader_workers = WORKERS
    tolerance = FP32_TOLERANCE


get_benchmark = LoaderFixed

if __name__ == "__main__":
    LoaderFixed.main()
