"""Optimized: `torch.compile(model)`, default mode.

Dynamo captures the whole forward as one graph; Inductor keeps the matmuls and SDPA as
library calls and fuses everything between them into generated Triton kernels: each
RMSNorm with the residual add before it, SiLU with the SwiGLU product. Fewer kernels,
and fewer trips of each activation through HBM. Compiled and warmed up in setup().
"""
from __future__ import annotations

import torch

from ch14._model_compile_common import ModelBench
from core.benchmark import Requirements


class CompiledDecoder(ModelBench):
    requires = Requirements(modules=("triton",))  # Inductor generates Triton kernels

    def prepare(self) -> None:
        self.forward = torch.compile(self.model)
        self.warm_up()


get_benchmark = CompiledDecoder

if __name__ == "__main__":
    from core.single import main
    main(CompiledDecoder)
