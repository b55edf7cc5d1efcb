"""Shared by `tensor_parallel`: the MLP of a 70B-class transformer layer, in bf16, over every GPU.

y = GELU(x · W1ᵀ) · W2ᵀ with d 8192 and hidden 28672 (W1 and W2 together 940 MB in bf16), on
2048 tokens that every rank holds. The baseline keeps the whole weights on every rank; the
tensor-parallel sides keep 1/world of each (hidden 28672 and the 2048 tokens both divide by
2, 4 and 8) and differ in how they combine the pieces. make_inputs gives the tokens (the same
on every rank); reference() rebuilds the whole weights from the seed and computes y on one GPU.

The pair runs on every GPU present (`bench run --gpus N` for fewer) and scales strongly: the
layer and the tokens are fixed, so the baseline's time stays one GPU's while the split's
FLOPs per GPU fall as 1/world and its all-reduce of the [tokens, d] output moves 2(n-1)/n of
it per rank.
"""
from __future__ import annotations

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

D, HIDDEN, TOKENS = 8192, 28672, 2048
CPU_D, CPU_HIDDEN, CPU_TOKENS = 64, 256, 16


class TensorParallelMlp(Benchmark):
    supports_cpu = True
    requires = Requirements(gpus=2, scales="strong")
    # bf16 GEMMs on every side; the sides sum the hidden dimension in different pieces (one
    # GEMM, or n pieces added in bf16 by the all-reduce, rounding n-1 times), which moves
    # outputs of ~0.5 by a few bf16 ulps (~4e-3 relative each): up to 1e-2 beyond rtol at 8
    # ranks. A missing piece is off by ~0.5/sqrt(n).
    tolerance = Tolerance(rtol=2e-2, atol=2e-2)

    def sizes(self) -> tuple[int, int, int]:
        return (D, HIDDEN, TOKENS) if self.ctx.is_cuda else (CPU_D, CPU_HIDDEN, CPU_TOKENS)

    def weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The whole W1 [hidden, d] and W2 [d, hidden], the same on every rank (one seed)."""
        d, hidden, _ = self.sizes()
        gen = self.generator(self.ctx.seed)
        w1 = self.randn(hidden, d, gen=gen) / math.sqrt(d)
        w2 = self.randn(d, hidden, gen=gen) / math.sqrt(hidden)
        return w1.to(torch.bfloat16), w2.to(torch.bfloat16)

    def setup(self, ctx: BenchContext) -> None:
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        w1, w2 = self.weights()
        self.keep(w1, w2)

    def keep(self, w1: torch.Tensor, w2: torch.Tensor) -> None:
        raise NotImplementedError

    def make_inputs(self, seed: int) -> torch.Tensor:
        d, _, tokens = self.sizes()
        return self.randn(tokens, d, gen=self.generator(seed), dtype=torch.bfloat16)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        w1, w2 = self.weights()
        return F.gelu(x.float() @ w1.float().T) @ w2.float().T

    def workload(self) -> Workload:
        # tokens/s: the FLOPs per GPU differ by design (the baseline does the whole MLP on
        # each GPU, tensor parallelism 1/world of it), so a rate against one GPU's roof would
        # mislead.
        return Workload(units=self.sizes()[2], unit_name="tokens")
