"""Baseline: forward and backward of a bf16 MLP (cuBLAS bf16 GEMMs, fp32 accumulate).

A bf16 start on purpose: fp8 is compared against what a mixed-precision trainer already
runs, not against fp32 (which would fold the bf16 gain into fp8's).
"""
from __future__ import annotations

from ch13._fp8_common import MlpFwdBwd


class Bf16Mlp(MlpFwdBwd):
    pass


get_benchmark = Bf16Mlp

if __name__ == "__main__":
    from core.single import main
    main(Bf16Mlp)
