"""Shared by `quantization` and `quantization_dynamic`: y = x @ W^T for one 8192 x 8192 layer.

Both stems start from the bf16 linear a model runs by default (weights drawn from the weight
seed, ~N(0, 1/K), so outputs are ~N(0, 1)); their optimized sides store W as int8 with one
fp32 scale per output channel (row of W), quantized once in setup() as a deployed model
does. They differ in the token count M, which decides what bounds the layer:

- `quantization`: decode, M = 16 tokens. The matmul reads 128 MB of bf16 weights to do
  2·16 FLOPs per weight: memory-bound, so halving the weight bytes is the whole game
  (int8 weight-only; the activations stay bf16). Both sides are timed by CUDA-graph replay,
  as serving engines replay their decode step: a 30-50 µs layer launched from Python
  measures the host's launch (the harness flagged both sides host-bound when eager).
- `quantization_dynamic`: prefill, M = 2048 tokens: compute-bound, so the int8 tensor cores'
  2x rate is what can pay (activations quantized per token inside run()).

`python -m ch13.sweep_quantization` times the parts on a GPU: the weight-only kernel's tiles
across M = 1..256 against cuBLAS and a measured copy, the dynamic side's quantize and GEMMs
one by one, and precisionfp8's GEMMs and quantization passes.

Tolerance, derived (per-channel symmetric int8: step = amax_row / 127). For a Gaussian row
of 8192 weights amax ≈ 4σ, so the step is ~0.031σ and the rounding error's std is
step/sqrt(12) ≈ 0.9% of σ; a dot product's K independent errors add in quadrature, so an
output errs by ~0.9% of its std (measured in tests/test_ch13.py). Dynamic quantization adds
the same again for the activations (per token): ~1.3%. The largest error of 10^5-10^7
outputs lies near 5.5 sigma: 5% (weight-only), 7.5% (dynamic). atol 0.1 / 0.15 (outputs
~N(0, 1)) plus rtol 1e-2 for bf16 output rounding; a wrong scale or layout errs by O(1).
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Callable

import torch

from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

K = N = 8192
CPU_K = CPU_N = 256
INT8_MAX = 127

WEIGHT_ONLY_TOLERANCE = Tolerance(rtol=1e-2, atol=0.1)
DYNAMIC_TOLERANCE = Tolerance(rtol=1e-2, atol=0.15)


def quantize_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 per row: (q [rows, cols] int8, scale [rows] fp32), w ≈ q * scale[:, None]."""
    scale = (w.float().abs().amax(dim=1) / INT8_MAX).clamp_min(1e-12)
    q = torch.round(w.float() / scale[:, None]).clamp(-INT8_MAX, INT8_MAX).to(torch.int8)
    return q, scale


def quantize_tokens(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row symmetric int8 of the activations in torch ops: (int8 [M, K], fp32 scale [M, 1]).
    The reference for the Triton quantizer (_int8_kernel.quantize_rows) and the CPU path."""
    scale = (x.float().abs().amax(dim=1, keepdim=True) / INT8_MAX).clamp_min(1e-12)
    return torch.round(x.float() / scale).clamp(-INT8_MAX, INT8_MAX).to(torch.int8), scale


def gpu_time_us(fn: Callable[[], Any], samples: int = 10) -> float:
    """GPU time of one fn() in µs: fn captured K times in one CUDA graph (core.timing), the
    median of `samples` replays divided by K. No host launch inside: what a graph replay pays."""
    from core.timing import graph_replay, measure_cuda

    replay, calls = graph_replay(fn)
    return 1e3 * statistics.median(measure_cuda(replay, samples).samples_ms) / calls


class LinearBench(Benchmark):
    """One bf16 linear; subclasses set `tokens` (CUDA) and prepare the weight."""

    tokens = 16
    cpu_tokens = 4

    @property
    def sizes(self) -> tuple[int, int, int]:
        """(M, K, N)"""
        return (self.tokens, K, N) if self.ctx.is_cuda else (self.cpu_tokens, CPU_K, CPU_N)

    def setup(self, ctx: BenchContext) -> None:
        _, k, n = self.sizes
        w = self.randn(n, k, gen=self.generator(ctx.seed)) / math.sqrt(k)
        self.prepare(w.to(torch.bfloat16))

    def prepare(self, w: torch.Tensor) -> None:
        self.w = w  # bf16 [N, K], as nn.Linear stores it

    def make_inputs(self, seed: int) -> torch.Tensor:
        m, k, _ = self.sizes
        return self.randn(m, k, gen=self.generator(seed), dtype=torch.bfloat16)

    def run(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, self.w)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        """The bf16 weights in float64: what every side approximates."""
        _, k, n = self.sizes
        w = (self.randn(n, k, gen=self.generator(self.ctx.seed)) / math.sqrt(k)).to(torch.bfloat16)
        return x.double() @ w.double().T

    def workload(self) -> Workload:
        m, k, n = self.sizes
        return Workload(bytes=2 * (m * k + n * k + m * n), flops=2 * m * n * k,
                        flops_dtype="bf16", units=m, unit_name="tokens")
