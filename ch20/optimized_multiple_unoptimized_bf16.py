"""Stage `bf16` (this fix alone, on top of the baseline): bf16 autocast (ch13, ch19).

Under `torch.autocast(dtype=torch.bfloat16)` the matmuls and attention run on tensor cores
in bf16 and their activations take half the bytes; weights, gradients, optimizer state and
the loss stay fp32. Expected to be the largest single stage: the fp32 step is matmul-bound
on CUDA cores. Precision change declared: bf16 keeps 8 significant bits; losses, gradient
sketches and weight moves differ from fp32's by the amount BF16_TOLERANCE allows
(measured on the CPU path, tests/test_ch20.py).
"""
from __future__ import annotations

from ch20._multiple_unoptimized_common import BF16_TOLERANCE, TrainingJob


class Bf16Autocast(TrainingJob):
    amp = True
    tolerance = BF16_TOLERANCE


get_benchmark = Bf16Autocast

if __name__ == "__main__":
    Bf16Autocast.main()
