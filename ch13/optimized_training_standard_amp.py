"""Stage 1 of 3 (`training_standard_amp`): bf16 autocast, still eager, same optimizer.

Under `torch.autocast(dtype=torch.bfloat16)` the matmuls and attention run on tensor cores
in bf16 and their activations take half the bytes; weights, gradients, optimizer state and
the loss stay fp32. Precision change declared: bf16 keeps 8 significant bits, so losses and
gradients differ from fp32's by a small relative amount (tolerance in _training_common.py).
"""
from __future__ import annotations

from ch13._training_common import BF16_TOLERANCE, TrainingStep
from ch13.baseline_training_standard import CONFIG


class AmpStep(TrainingStep):
    cuda_config = CONFIG
    amp = True
    tolerance = BF16_TOLERANCE


get_benchmark = AmpStep

if __name__ == "__main__":
    from core.single import main
    main(AmpStep)
