"""Baseline: the decoder in eager PyTorch.

Each op is its own kernel: the matmuls go to cuBLAS and attention to SDPA's flash kernel,
both already fast; what eager mode loses is around them. nn.RMSNorm, the SiLU, the SwiGLU
product and each residual add read and write whole activations, one kernel at a time.
"""
from __future__ import annotations

from ch14._model_compile_common import ModelBench

# Autotuning in the max-autotune variant benchmarks GEMM templates for every matmul shape:
# minutes on a cold cache, on top of the default compile and the timing of three sides.
TIMEOUT_S = 1800


class EagerDecoder(ModelBench):
    pass


get_benchmark = EagerDecoder

if __name__ == "__main__":
    from core.single import main
    main(EagerDecoder)
