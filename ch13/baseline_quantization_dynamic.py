"""Baseline: the same bf16 linear at prefill size (2048 tokens x 8192 -> 8192), cuBLAS.

275 GFLOP per call on 160 MB of operands: compute-bound on the bf16 tensor cores.
"""
from __future__ import annotations

from ch13._quantization_common import LinearBench


class Bf16PrefillLinear(LinearBench):
    supports_cpu = True
    tokens = 2048
    cpu_tokens = 32  # torch._int_mm needs more than 16 rows


get_benchmark = Bf16PrefillLinear

if __name__ == "__main__":
    from core.single import main
    main(Bf16PrefillLinear)
