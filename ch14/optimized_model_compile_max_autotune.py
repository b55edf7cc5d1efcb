"""Variant: `torch.compile(model, mode="max-autotune-no-cudagraphs")`.

On top of the default mode's fusion, Inductor benchmarks, for every matmul shape, Triton
GEMM templates against cuBLAS and keeps the fastest (and autotunes its generated kernels'
launch configs). That search is the compile cost: minutes on a cold cache.

Why not "max-autotune": that mode also captures the model in a CUDA graph, which changes a
second thing at once (launch overhead, negligible for milliseconds of work per layer here)
and returns outputs that live in the graph's memory pool and are overwritten by the next
call, so an output kept for verification would change under the harness. This variant
isolates the autotuning; chapter 12 measures CUDA graphs.
"""
from __future__ import annotations

import torch

from ch14._model_compile_common import ModelBench
from core.benchmark import Requirements


class MaxAutotuneDecoder(ModelBench):
    requires = Requirements(modules=("triton",))

    def prepare(self) -> None:
        self.forward = torch.compile(self.model, mode="max-autotune-no-cudagraphs")
        self.warm_up()


get_benchmark = MaxAutotuneDecoder

if __name__ == "__main__":
    from core.single import main
    main(MaxAutotuneDecoder)
