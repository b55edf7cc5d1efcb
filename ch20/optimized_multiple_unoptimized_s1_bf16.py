"""Stage 1 of 5 (cumulative): the baseline + bf16 autocast (ch13, ch19).

Under `torch.autocast(dtype=torch.bfloat16)` the matmuls and attention run on tensor cores
in bf16 and their activations take half the bytes; weights, gradients, optimizer state and
the loss stay fp32. First because it is expected to be the largest fix: the fp32 step
(TF32 off) is matmul-bound on CUDA cores, and every later stage acts on the step this one
shortens. Precision change declared, and carried by every later stage: bf16 keeps 8
significant bits; losses, gradient sketches and weight moves differ from fp32's by the
amount BF16_TOLERANCE allows (measured on the CPU path, tests/test_ch20.py).
"""
from __future__ import annotations

from ch20._multiple_unoptimized_common import BF16_TOLERANCE, TrainingJob


class Stage1Bf16(TrainingJob):
    amp = True
    tolerance = BF16_TOLERANCE


get_benchmark = Stage1Bf16

if __name__ == "__main__":
    from core.single import main
    main(Stage1Bf16)
