"""Stage 3 of 5 (cumulative): stage 2 (bf16, fused ops) + AdamW(fused=True) (ch13).

torch's default AdamW runs the update on a GPU as the foreach path: one multi-tensor
kernel per operation (decay, two moment updates, bias corrections, sqrt, divide, update)
over all 51 parameter tensors, each operation its own pass over memory; `fused=True`
updates every tensor in a few launches of one kernel that reads each parameter, gradient
and moment once. The optimizer's cost does not depend
on the forward/backward's precision (its state stays fp32), so once stages 1 and 2 have
shortened forward and backward it is a larger share of the step than behind the fp32 step.
The fused kernel orders its arithmetic slightly differently; bf16 throughout
(BF16_TOLERANCE).
"""
from __future__ import annotations

from ch20._multiple_unoptimized_common import BF16_TOLERANCE
from ch20.optimized_multiple_unoptimized_s2_fused_ops import Stage2FusedOps


class Stage3FusedOptimizer(Stage2FusedOps):
    fused_optimizer = True
    tolerance = BF16_TOLERANCE


get_benchmark = Stage3FusedOptimizer

if __name__ == "__main__":
    from core.single import main
    main(Stage3FusedOptimizer)
