"""Optimized: all five fixes together (the last row of the stage table).

Worker processes with pinned, non_blocking batches; bf16 autocast; AdamW(fused=True); fused
RMSNorm and GELU kernels; the loss logged as a device tensor read every 20 steps. The stage
variants (`_loader`, `_bf16`, `_fused_optimizer`, `_fused_ops`, `_no_sync_logging`) each
apply one of these alone. Precision change declared: bf16 autocast (BF16_TOLERANCE).
"""
from __future__ import annotations

from ch20._multiple_unoptimized_common import BF16_TOLERANCE, WORKERS, TrainingJob


class AllFixed(TrainingJob):
    loader_workers = WORKERS
    amp = True
    fused_optimizer = True
    fused_ops = True
    sync_logging = False
    tolerance = BF16_TOLERANCE


get_benchmark = AllFixed

if __name__ == "__main__":
    AllFixed.main()
