"""Shared by the `triton_norm` pairs: RMSNorm of 32768 tokens x 4096 features, bf16.

    y = w * (x * rsqrt(mean(x^2) + eps))        (over the last dimension, in fp32)

`rms_norm` is torch's own `F.rms_norm`, what an engineer calls first (aten's fused kernel on
a GPU, one pass); `triton_norm_fusion` times the same formula spelled out as eager ops, as
the Llama / Hugging Face module writes it. Memory-bound: the fewest bytes are one read of x,
one write of y and the 8 KiB weight (256 MiB each way, ~5x a Hopper L2).

Tolerance: F.rms_norm (and Inductor's kernel compiled from it) and the Triton kernel sum the
squares in fp32, in different orders, multiply by the weight in fp32 and round once to bf16;
the eager spelling rounds the normalized value to bf16 before the weight and again after.
Either way two sides differ by at most one bf16 ulp, 2^-7 = 0.8% relative (on the CPU,
double against single rounding: a quarter of the elements differ, the worst by 31% of this
tolerance), inside rtol = atol = 2e-2.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

ROWS, COLS = 32768, 4096  # e.g. a batch of 8 x 4096 tokens at a 7B model's width
EPS = 1e-6


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """torch's RMSNorm over the last dimension (the `triton_norm` baseline)."""
    return F.rms_norm(x, (x.shape[-1],), w, eps)


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
