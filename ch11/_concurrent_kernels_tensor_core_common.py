"""Shared by `concurrent_kernels_tensor_core`: compute-bound GEMMs beside a memory-bound kernel.

A training step's forward GEMMs for the next micro-batch (bf16, tensor cores: an MLP block
of 4096 tokens, 4096 → 16384 → 4096) are independent of a memory-bound pass over the
previous step's state: here an EMA update of 1 GiB of fp32 weights (out = 0.999·ema +
0.001·w, reading 2 GiB and writing 1 GiB), the kind of elementwise pass that keeps HBM
busy and the tensor cores idle. The GEMMs are limited by the tensor cores and the pass by
HBM bandwidth, so run side by side each could, in principle, use what the other leaves.

Both sides run the same operations on the same values (bit-identical outputs); they differ
in whether the pass and the GEMMs share one stream. The GEMM output and the EMA are new
tensors: run() changes no input and no weight.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

TOKENS, MODEL, FFN = 4096, 4096, 16384  # 1.1 TFLOP: ~1.5 ms at ~750 TFLOP/s
EMA_FLOATS = 256 * 1024 * 1024  # 1 GiB of fp32: 3 GiB of traffic, ~1.1 ms at ~3 TB/s
DECAY = 0.999


class TensorCoreOverlapBench(Benchmark):
    requires = Requirements(cuda=True)
    tolerance = Tolerance(rtol=0.0, atol=0.0)  # the same kernels on the same values

    def setup(self, ctx: BenchContext) -> None:
        gen = self.generator(ctx.seed)
        self.w1 = (self.randn(MODEL, FFN, gen=gen) * MODEL ** -0.5).to(torch.bfloat16)
        self.w2 = (self.randn(FFN, MODEL, gen=gen) * FFN ** -0.5).to(torch.bfloat16)

    def make_inputs(self, seed: int) -> dict[str, torch.Tensor]:
        gen = self.generator(seed)
        return {"x": self.randn(TOKENS, MODEL, gen=gen, dtype=torch.bfloat16),
                "ema": self.randn(EMA_FLOATS, gen=gen), "weights": self.randn(EMA_FLOATS, gen=gen)}

    def gemms(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x @ self.w1) @ self.w2

    @staticmethod
    def ema_update(ema: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        return torch.lerp(ema, weights, 1.0 - DECAY)  # one elementwise kernel

    def workload(self) -> Workload:
        return Workload(flops=2 * 2 * TOKENS * MODEL * FFN, flops_dtype="bf16",
                        bytes=3 * EMA_FLOATS * 4 + (TOKENS * MODEL * 2 + TOKENS * FFN * 2) * 2)
