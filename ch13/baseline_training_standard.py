"""Baseline: an eager fp32 training step with torch's default AdamW.

The step a first training script runs: fp32 everywhere (TF32 off, PyTorch's default for
matmuls, pinned for this side), eager execution (one kernel per operation, every
intermediate written to memory), and `torch.optim.AdamW(params, lr=...)` with nothing else
set, which on a GPU is the foreach (multi-tensor) implementation. A 6-block GPT (d 1024,
16 heads, vocab 16384, 92M parameters) on 8 sequences of 1024 tokens; the whole step peaks
near 6 GB, so nothing forces micro-batching.
"""
from __future__ import annotations

from ch13._training_common import Config, TrainingStep

CONFIG = Config(vocab=16384, d_model=1024, heads=16, layers=6, seq=1024, batch=8)


class EagerFp32Step(TrainingStep):
    cuda_config = CONFIG
    # A ~115 ms fp32 step against a ~20 ms optimized one: the default 4 s gave ~35 baseline
    # samples and a ±8% interval on an H100 (measured when this side ran the per-parameter
    # AdamW loop; to be re-measured with the default AdamW).
    time_cap_s = 15.0
    tf32_off = True


get_benchmark = EagerFp32Step

if __name__ == "__main__":
    from core.single import main
    main(EagerFp32Step)
