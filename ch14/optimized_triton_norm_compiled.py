"""Inductor's answer: the same eager function through torch.compile, beside our kernel.

TorchInductor sees the reduction and the elementwise ops around it and generates one Triton
kernel per row block (a "persistent reduction" when the row fits, as 4096 bf16 does), with
its own choice of block size and warps. Comparing it with the hand-written kernel shows how
much of the win a one-line change gets. Compilation and warm-up happen in setup().
"""
from __future__ import annotations

import torch

from ch14._triton_norm_common import NormBench, rms_norm
from core.benchmark import Requirements


class CompiledRMSNorm(NormBench):
    requires = Requirements(modules=("triton",))  # Inductor generates Triton kernels

    def prepare(self) -> None:
        self.norm = torch.compile(rms_norm)
        self.norm(self.make_inputs(self.ctx.seed), self.w)  # compile (first call), warm up

    def run(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x, self.w)


get_benchmark = CompiledRMSNorm

if __name__ == "__main__":
    from core.single import main
    main(CompiledRMSNorm)
