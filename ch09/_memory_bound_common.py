"""Shared by the `memory_bound` pair: a batch-1 decode GEMV, y = x @ W.T, W 28672 x 8192.

The roofline's other end. `compute_bound` multiplies two 8192 x 8192 matrices: every weight
value loaded is reused 8192 times, over 1300 FLOP per byte, and fp32 -> bf16 pays the tensor
cores' rate. Here one token's activations x (1 x 8192) meet the weight of one large MLP
projection (28672 x 8192, a 70B-class model's up-projection): each weight value is loaded
once and used in one multiply-add. That is 2 FLOPs per 4 bytes in fp32, 0.5 FLOP/byte, and
1 FLOP/byte in bf16 — one to two orders of magnitude left of the ridge (tens of FLOP/byte
for fp32 CUDA cores, hundreds for bf16 tensor cores on a Hopper GPU). The time is the weight's
bytes over the HBM bandwidth whatever the math units do, so the lever is fewer bytes: the
same fp32 -> bf16 change that buys the tensor cores' rate in `compute_bound` can buy at most
2x here (half the bytes), and both sides are expected to sit near the copy ceiling. W is 896 MiB in fp32 (448 MiB in
bf16), ~18x (~9x) a Hopper L2: no run is served from cache.

The baseline is what one gets from a model loaded in its default fp32 (Hugging Face
`from_pretrained` without `torch_dtype`): F.linear on fp32 weights. The optimized side stores
the weight in bf16 (rounded once, in setup(): a model is loaded that way) and rounds the
activations on every call (8192 values, 32 KiB: negligible next to the weight).

Tolerance (bf16 side), derived. W ~ N(0, 1/K) (a layer's init scale) and x ~ N(0, 1), so each
output y ~ N(0, 1) whatever K. bf16 rounding changes a value by a relative delta with
standard deviation ~1.7e-3 (see _compute_bound_common.py); a product w*x picks up
delta_w + delta_x and the K products' errors add in quadrature:
sigma_err = sqrt(K * E[w^2 x^2]) * sqrt(2) * 1.7e-3 = sqrt(2) * 1.7e-3 ≈ 2.4e-3, independent
of K (tests/test_ch09_new.py measures it on CPU). The largest of 28672 such errors lies near
4.3 sigma (≈ 0.01). atol = 0.02 (8 sigma) accepts that and rejects a wrong result, whose
errors are O(1) — the size of y itself. rtol = 5e-3 covers the bf16 rounding of the output
(at most 2^-9 ≈ 2e-3 of |y|) before it is widened back to fp32.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

GPU_SHAPE = (1, 28672, 8192)  # (tokens, out_features, in_features): batch-1 decode
CPU_SHAPE = (1, 512, 1024)  # the same GEMV, small enough for a CPU test
BF16_WEIGHTS_TOLERANCE = Tolerance(rtol=5e-3, atol=0.02)


class MemoryBoundBench(Benchmark):
    supports_cpu = True
    # fp32 vs float64: K fp32 roundings of partial sums of size O(1), ~1e-6; well inside.
    reference_tolerance = Tolerance(rtol=1e-4, atol=1e-4)

    def setup(self, ctx: BenchContext) -> None:
        self.tokens, self.out_features, self.in_features = GPU_SHAPE if ctx.is_cuda else CPU_SHAPE
        gen = self.generator(ctx.seed)
        scale = 1.0 / math.sqrt(self.in_features)  # y ~ N(0, 1) for x ~ N(0, 1)
        self.w = scale * self.randn(self.out_features, self.in_features, gen=gen)  # fp32 weight
        self.prepare()

    def prepare(self) -> None:
        """Per-side weight storage (conversion happens here, once); not timed."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(self.tokens, self.in_features, gen=self.generator(seed))  # x, fp32

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x.double(), self.w.double())

    def gemv_workload(self, weight_bytes_per_value: int) -> Workload:
        """The weight read once, x read and y written in fp32; 2 FLOPs per weight value."""
        t, n, k = self.tokens, self.out_features, self.in_features
        return Workload(bytes=weight_bytes_per_value * n * k + 4 * t * (k + n),
                        flops=2 * t * n * k,
                        flops_dtype="fp32" if weight_bytes_per_value == 4 else "bf16")
