"""Shared by the `triton_norm` pair: RMSNorm of 32768 tokens x 4096 features, bf16.

    y = w * (x * rsqrt(mean(x^2) + eps))        (over the last dimension, in fp32)

written as the Llama/Hugging Face RMSNorm module writes it: upcast to fp32, square, mean,
add eps, rsqrt, multiply, cast back, multiply by the weight. Memory-bound: the fewest bytes
are one read of x, one write of y and the 8 KiB weight (256 MiB each way, ~5x a Hopper L2).

Tolerance: every side computes the sum of squares in fp32 (in different orders) and rounds
twice to bf16 like the module; where an fp32 difference straddles a rounding boundary two
sides differ by one bf16 ulp, 2^-7 = 0.8% relative, inside rtol = 2e-2.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

ROWS, COLS = 32768, 4096  # e.g. a batch of 8 x 4096 tokens at a 7B model's width
EPS = 1e-6


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """The eager module (the baseline, and what torch.compile fuses)."""
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return w * xf.to(x.dtype)


class NormBench(Benchmark):
    tolerance = Tolerance(rtol=2e-2, atol=2e-2)

    def setup(self, ctx: BenchContext) -> None:
        gen = self.generator(ctx.seed)
        self.w = (1.0 + 0.1 * self.randn(COLS, gen=gen)).to(torch.bfloat16)  # the norm's scale
        self.prepare()

    def prepare(self) -> None:
        """Per-variant setup (compilation and warm-up); not timed."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(ROWS, COLS, gen=self.generator(seed), dtype=torch.bfloat16)  # x

    def workload(self) -> Workload:
        return Workload(bytes=2 * ROWS * COLS * 2 + COLS * 2, units=ROWS, unit_name="rows")
