"""Stage 2 of 5 (cumulative): stage 1 (bf16) + library kernels for the elementwise chains
(ch09, ch14).

RMSNorm written out is five kernels and the tanh-GELU about seven, each a full pass over
the activation, forward and again in backward; `F.rms_norm` (on CUDA,
`aten::_fused_rms_norm`, a fused kernel since PyTorch 2.8) and `F.gelu(approximate="tanh")`
compute the same functions in one kernel each, forward and backward. (torch.compile fuses
them too, with the residual adds; the book's ch14 pairs measure that.) Expected to matter
more after stage 1 than on the fp32 step: bf16 shrinks the matmuls on tensor cores, so the
memory-bound elementwise passes become a larger share of what is left. bf16 throughout
(BF16_TOLERANCE).
"""
from __future__ import annotations

from ch20._multiple_unoptimized_common import BF16_TOLERANCE
from ch20.optimized_multiple_unoptimized_s1_bf16 import Stage1Bf16


class Stage2FusedOps(Stage1Bf16):
    fused_ops = True
    tolerance = BF16_TOLERANCE


get_benchmark = Stage2FusedOps

if __name__ == "__main__":
    from core.single import main
    main(Stage2FusedOps)
