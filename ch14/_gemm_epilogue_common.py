"""Shared by the `gemm_epilogue` pair: an MLP up-projection, y = GELU(x @ W^T + b), bf16.

x [8192 tokens, 4096] is the per-call input; W [16384, 4096] (nn.Linear's layout) and b are
the layer's parameters, drawn in setup(). Every side uses the tanh approximation of GELU,
the one cuBLASLt's epilogue implements (F.gelu(approximate="tanh"), GPT-2/NeoX style MLPs).

The matmul (1.1 TFLOP) dominates; what the pair measures is the activation's extra pass over
the 256 MiB output (read + write) that a separate GELU kernel costs and a fused epilogue
does not. The FLOP count and the fewest bytes are the same for every side.

`reference()` is the same layer in fp32 (TF32 off). Tolerance: the baseline rounds to bf16
after the matmul+bias and again after GELU, a fused epilogue once at the end; outputs are
O(1), so the sides differ by up to ~2 bf16 ulps (2^-6 relative), inside rtol = atol = 2e-2.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

TOKENS, D_IN, D_OUT = 8192, 4096, 16384  # batch 4 x 2048 tokens, d_model 4096, 4x MLP


class EpilogueBench(Benchmark):
    requires = Requirements(min_compute_capability=(8, 0))  # bf16 tensor cores
    tolerance = Tolerance(rtol=2e-2, atol=2e-2)

    def setup(self, ctx: BenchContext) -> None:
        gen = self.generator(ctx.seed)
        w = self.randn(D_OUT, D_IN, gen=gen) / math.sqrt(D_IN)  # x @ W^T is O(1)
        self.w = w.to(torch.bfloat16)
        self.b = (0.1 * self.randn(D_OUT, gen=gen)).to(torch.bfloat16)
        self.prepare()

    def prepare(self) -> None:
        """Per-variant setup (weight layout, compilation); not timed."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(TOKENS, D_IN, gen=self.generator(seed), dtype=torch.bfloat16)  # x

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False  # a true fp32 product
        try:
            y = F.linear(x.float(), self.w.float(), self.b.float())
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev
        return F.gelu(y, approximate="tanh")

    def workload(self) -> Workload:
        return Workload(bytes=2 * (TOKENS * D_IN + D_OUT * D_IN + D_OUT + TOKENS * D_OUT),
                        flops=2 * TOKENS * D_IN * D_OUT, flops_dtype="bf16",
                        units=TOKENS, unit_name="tokens")
