"""Baseline: a bf16 linear at decode size (16 tokens x 8192 -> 8192), cuBLAS.

What a model runs by default: `F.linear` on bf16 weights. At 16 tokens the GEMM reads
128 MB of weights for 4.3 GFLOP, so its time is the weight bytes over HBM bandwidth.

Timed by CUDA-graph replay (`timing_mode = "graph"`), as vLLM and TensorRT-LLM replay their
decode step: the GPU's time per call. Launched eagerly from Python, a ~50 µs layer measures
the host (the harness found both sides' host time per call above their GPU time).
"""
from __future__ import annotations

from ch13._quantization_common import LinearBench


class Bf16DecodeLinear(LinearBench):
    supports_cpu = True
    timing_mode = "graph"


get_benchmark = Bf16DecodeLinear

if __name__ == "__main__":
    from core.single import main
    main(Bf16DecodeLinear)
