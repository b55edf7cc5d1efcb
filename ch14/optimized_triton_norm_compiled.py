"""Inductor's answer: the baseline's `F.rms_norm` call through torch.compile, beside our kernel.

AOTAutograd decomposes the call into its ops (upcast, pow, mean, add, rsqrt, two muls, cast)
and TorchInductor fuses them back into one generated Triton reduction (a "persistent
reduction" when the row fits, as 4096 bf16 does), with its own choice of block size and
warps. So this side is Inductor's kernel against aten's, with the hand-written one beside.
Compilation and warm-up happen in setup().
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
