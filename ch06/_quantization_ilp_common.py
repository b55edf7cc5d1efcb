"""Inputs for the quantization_ilp pair: a weight-only int8 GEMV at decode, 28672 x 4096.

The layer is the fused gate/up projection of a Llama-3-8B MLP (2 x 14336 outputs, 4096
inputs) quantized to int8 with one fp32 scale per output row, applied to one token's fp32
activation vector (batch 1, the decode step). Each call reads 117 MB of int8 weights once,
about 2.3x an H100's 50 MB L2, so every call streams them from HBM: the kernel is
memory-bound (2 FLOPs per weight byte, against a fp32 ridge of ~20 FLOP/byte on Hopper).
What ILP can buy here is therefore not arithmetic but latency hiding: more bytes in flight
per SM so HBM stays busy. Both kernels use 32-36 registers, so 64 warps fit per SM: at that
occupancy other warps already hide the one-accumulator FMA chain, and the expected gain
comes from the 16-byte loads (16x the weight bytes per load instruction, more of them in
flight per lane). quantization_ilp.cu explains the two kernels.

Expected on a GPU (not measured yet): the baseline's byte-sized loads put only a few bytes
per lane in flight, short of what Little's law asks for at 3-4.8 TB/s, so the 16-byte loads
and four chains should help; how much depends on the GPU. A second limiter to check: both
sides convert every weight with I2F, which Hopper runs at 16 per clock per SM, about the
same rate at which an H200's HBM delivers int8 weights to an SM; if both sides run at the
same speed there, that conversion (not memory) is the bound. The book's anchor for the
lesson is chapter 6's ILP section; no number from it is claimed here.

Weights and scales are the pair's parameters (setup(), from ctx.seed); the activation vector
is each call's input.

Tolerance: both kernels multiply the same int8 weights (exact in fp32) by the same fp32
activations with fused multiply-adds and sum in fp32, in different orders (lane-strided
single chains vs. four interleaved chains per lane), then scale. Here |y| is ~1 and
scale·Σ|w·x| is ~50 per row. An exact CPU emulation of both kernels' FMA order
(tests/test_ch06_new.py; 1024 rows of 4096) differs from the float64 reference by at most
~1e-6 and between the two orders by ~1.1e-6, i.e. ~2e-8 of scale·Σ|w·x|. atol = 2e-5 with
rtol = 1e-5 keeps ~15x margin and still catches one weight off by a single int8 step
(an error of scale·|x|, ~6e-4 for |x| ~ 1).
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Tolerance, Workload
from core.cuda_pair import CudaPair

ROWS, COLS = 2 * 14336, 4096
WEIGHT_STD = 0.02  # a trained projection's typical spread; sets the scales' size only


def quantize_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-row int8: w ≈ q · scale[:, None], q in [-127, 127]."""
    scale = w.abs().amax(dim=1).clamp_min(torch.finfo(torch.float32).tiny) / 127.0
    q = torch.round(w / scale[:, None]).clamp_(-127, 127).to(torch.int8)
    return q, scale.float()


def int8_gemv_reference(q: torch.Tensor, scale: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """y = scale ⊙ (q · x) in float64: the answer both kernels approximate in fp32."""
    return scale.double() * (q.double() @ x.double())


class Int8GemvBench(CudaPair):
    source = "quantization_ilp.cu"
    tolerance = Tolerance(rtol=1e-5, atol=2e-5)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        gen = self.generator(ctx.seed)
        # One row block at a time keeps the fp32 copy small (a 470 MB tensor otherwise).
        q, scales = [], []
        for start in range(0, ROWS, 4096):
            block = self.randn(min(4096, ROWS - start), COLS, gen=gen) * WEIGHT_STD
            qb, sb = quantize_rows(block)
            q.append(qb)
            scales.append(sb)
        self.q = torch.cat(q)
        self.scale = torch.cat(scales)
        self.y = torch.full((ROWS,), float("nan"), device=ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(COLS, gen=self.generator(seed))  # one token's activations

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        # Both sides launch kernels from one .cu file: check the baseline against torch.
        return int8_gemv_reference(self.q, self.scale, x)

    def workload(self) -> Workload:
        return Workload(bytes=ROWS * COLS + 4 * (2 * ROWS + COLS), flops=2 * ROWS * COLS,
                        flops_dtype="fp32")
