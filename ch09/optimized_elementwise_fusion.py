"""Optimized: the whole epilogue as one hand-written Triton kernel.

x is read once and y written once; the five intermediates live in registers. The kernel
is compiled on the first call, in setup(), so the timed run() only launches it.
"""
from __future__ import annotations

import torch

from ch09._elementwise_fusion_common import ElementwiseBench
from core.benchmark import Requirements


class TritonEpilogue(ElementwiseBench):
    requires = Requirements(modules=("triton",))

    def prepare(self) -> None:
        from ch09._elementwise_fusion_kernel import fused_epilogue  # lazy: needs triton

        self.kernel = fused_epilogue
        warmup = self.make_inputs(self.ctx.seed)  # throwaway data of the real shape
        self.y = self.nan_like(warmup)  # unwritten elements fail verification
        self.kernel(warmup, self.w, self.b, out=self.y)  # JIT-compile now, not in the timed run
        self.y.fill_(float("nan"))

    def run(self, x: torch.Tensor) -> torch.Tensor:
        return self.kernel(x, self.w, self.b, out=self.y)


get_benchmark = TritonEpilogue

if __name__ == "__main__":
    from core.single import main
    main(TritonEpilogue)
