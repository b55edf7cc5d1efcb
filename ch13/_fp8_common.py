"""Shared by `precisionfp8`: forward and backward of a linear-heavy bf16 MLP.

Two residual MLP blocks, y = x + W2·GELU(W1·x) (d 4096, hidden 16384: 268M weights, bf16),
on 8192 tokens: six GEMMs forward and backward per block, ~13 TFLOP per call, compute-bound.
make_inputs(seed) gives the tokens x and the gradient arriving from above, dy; run() does
forward, then backward from dy, and returns the output y, the input gradient dx and the
four weight gradients. Nothing is stepped: the call is repeatable, so timed outputs are
checked too. Every tensor is returned in units of its own RMS, with the six RMS values:
the sides differ by a relative error, which one tolerance then fits.

The fp8 side follows the recipe Transformer Engine calls HYBRID: e4m3 (3 mantissa bits) for
activations and weights in forward, e5m2 (2 mantissa bits, more range) for the gradients in
backward, one fp32 scale per tensor from its amax, recomputed every call (dynamic scaling).
Its weights are quantized inside run(): in training they change every step.

Tolerance, derived. Rounding to e4m3 errs by ~2.7% (std) of a value relative, e5m2 by
~5.4%. A GEMM output's error adds its operands' in quadrature, and backward compounds them
(dW1 is built from a gradient that was already an fp8 GEMM's output, re-quantized).
Measured at three CPU sizes up to 512 x 1024 x 512 tokens (2 seeds each): per-element error
std, in RMS units, 4.3% for y, 7.2% for dx, 7.5-10.3% for the weight gradients; the largest
of 0.5M elements 0.57 (5.5 sigma of dW1's), consistent with Gaussian tails, which at the
CUDA sizes' 67M elements put the largest near 6.1 sigma ≈ 0.63. atol 1.0 RMS (~10 sigma)
and rtol 0.1 (the six RMS values differ by ~1-4%). A scale off by 2x moves every element by
its own size, so about a quarter of them leave the band; a wrong layout or transpose errs by
O(1) RMS almost everywhere.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

D, HIDDEN, TOKENS, BLOCKS = 4096, 16384, 8192, 2
CPU_D, CPU_HIDDEN, CPU_TOKENS = 64, 128, 32

FP8_TRAINING_TOLERANCE = Tolerance(rtol=0.1, atol=1.0)


def rms_units(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    t = t.float()
    rms = t.pow(2).mean().sqrt()
    return t / rms, rms


class MlpFwdBwd(Benchmark):
    """Forward + backward of the block stack; subclasses supply `linear(x, w)`."""

    supports_cpu = True

    @property
    def sizes(self) -> tuple[int, int, int]:
        return (D, HIDDEN, TOKENS) if self.ctx.is_cuda else (CPU_D, CPU_HIDDEN, CPU_TOKENS)

    def setup(self, ctx: BenchContext) -> None:
        d, hidden, _ = self.sizes
        gen = self.generator(ctx.seed)
        self.weights = []
        for _ in range(BLOCKS):
            w1 = self.randn(hidden, d, gen=gen) / math.sqrt(d)
            w2 = self.randn(d, hidden, gen=gen) / math.sqrt(hidden)
            self.weights += [w.to(torch.bfloat16).requires_grad_() for w in (w1, w2)]

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        d, _, tokens = self.sizes
        gen = self.generator(seed)
        return (self.randn(tokens, d, gen=gen, dtype=torch.bfloat16),
                self.randn(tokens, d, gen=gen, dtype=torch.bfloat16))

    def linear(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return F.linear(x, w)

    def run(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        x_in, dy = inputs
        x = x_in.detach().requires_grad_()  # a new tensor on the same storage: never written
        for w in self.weights:
            w.grad = None
        y = x
        for i in range(0, len(self.weights), 2):
            y = y + self.linear(F.gelu(self.linear(y, self.weights[i])), self.weights[i + 1])
        y.backward(dy)
        outs = [rms_units(t) for t in (y.detach(), x.grad, *(w.grad for w in self.weights))]
        return (*(o[0] for o in outs), torch.stack([o[1] for o in outs]))

    def workload(self) -> Workload:
        d, hidden, tokens = self.sizes
        return Workload(flops=3 * 2 * 2 * d * hidden * tokens * BLOCKS, flops_dtype="bf16",
                        units=tokens, unit_name="tokens")
