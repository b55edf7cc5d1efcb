"""Baseline: a first training script, five individually common flaws stacked.

The training process packs every batch itself (`num_workers=0`) into pageable memory and
copies it with a blocking `.to()`; the model runs in fp32 (TF32 off, PyTorch's default for
matmuls) with RMSNorm and GELU written out as tensor expressions (one kernel per operator);
AdamW is `torch.optim.AdamW(params, lr=...)` with torch's defaults (the foreach path on a
GPU, one pass over memory per operation of the update); and every step ends with
`loss.item()` for the log, a host-device sync. See _multiple_unoptimized_common.py for the
job (a 134M-parameter transformer, 2 steps of 8 x 512 tokens per call on a GPU).
"""
from __future__ import annotations

from ch20._multiple_unoptimized_common import TrainingJob

TIMEOUT_S = 1500  # five variants (stages 1-4 and the full one), each timed up to 10 s, plus verifying


class UnoptimizedJob(TrainingJob):
    cpu_bound = ("the training process packs every batch itself (num_workers=0) and syncs each "
                 "step for its log: on an H200 the baseline's host time per call (353.7 ms, at "
                 "4 steps a call) matched its GPU time (353.6 ms) and the stages' intervals "
                 "spread ±8-9%, so every stage's speedup depends on the host's CPU as much "
                 "as on the GPU")
    # measured on an H200 (2026-11-28): 43.9 s for the pair (checks 12, timing 23)
    slow_because = ("six sides (the baseline and five cumulative stages) of a training job "
                    "whose baseline call is ~180 ms of host-paced steps")


get_benchmark = UnoptimizedJob

if __name__ == "__main__":
    from core.single import main
    main(UnoptimizedJob)
