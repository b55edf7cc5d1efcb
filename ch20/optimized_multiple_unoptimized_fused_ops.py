"""Stage `fused_ops` (this fix alone, on top of the baseline): library kernels for the
elementwise chains (ch09, ch14).

RMSNorm written out is five kernels and the tanh-GELU about seven, each a full pass over
the activation, forward and again in backward; `F.rms_norm` (on CUDA,
`aten::_fused_rms_norm`, a fused kernel since PyTorch 2.8) and `F.gelu(approximate="tanh")`
compute the same functions in one kernel each, forward and backward. (torch.compile fuses
them too, with the residual adds; the book's ch14 pairs measure that.) Same math in fp32, a
different rounding order (FP32_TOLERANCE).
"""
from __future__ import annotations

from ch20._multiple_unoptimized_common import FP32_TOLERANCE, TrainingJob


class FusedOps(TrainingJob):
    fused_ops = True
    tolerance = FP32_TOLERANCE


get_benchmark = FusedOps

if __name__ == "__main__":
    FusedOps.main()
