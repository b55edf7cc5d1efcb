"""Shared by the `flash_sdp` pair: causal prefill attention, bf16, B=8 H=16 S=4096 D=128.

A decoder's prefill attends causally: query i sees keys 0..i. There are two ways to say so to
`F.scaled_dot_product_attention`, and they reach different kernels:

- an explicit mask tensor (`attn_mask=tril(ones(S, S))`), what code ported from a model that
  builds its own mask does. SDPA cannot know the tensor is causal, so FlashAttention (which
  takes no mask) is ruled out; SDPA runs a kernel that accepts a mask (memory-efficient
  attention, or cuDNN where it is enabled), which visits every one of the S x S tiles, reads
  the mask, and throws away the upper half after computing it;
- `is_causal=True`: FlashAttention-2 skips the tiles above the diagonal (half the FLOPs) and
  reads no mask.

Both sides compute the same function at the same precision. Tolerance: the kernels sum in
different orders (bf16 outputs, fp32 accumulation); outputs are averages of N(0, 1) values,
|out| < ~4, so rtol = atol = 2e-2 is ~2 bf16 ulps at the largest values.

On the CPU (supports_cpu) the shapes shrink to B=2 H=4 S=256 D=32 in fp32.
"""
from __future__ import annotations

import torch

from core.benchmark import Benchmark, Tolerance, Workload

B, H, S, D = 8, 16, 4096, 128
CPU_SHAPE = (2, 4, 256, 32)


class CausalPrefillBench(Benchmark):
    supports_cpu = True
    tolerance = Tolerance(rtol=2e-2, atol=2e-2)

    def shape(self) -> tuple[int, int, int, int]:
        return (B, H, S, D) if self.ctx.is_cuda else CPU_SHAPE

    @property
    def dtype(self) -> torch.dtype:
        return torch.bfloat16 if self.ctx.is_cuda else torch.float32

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        gen = self.generator(seed)
        return tuple(self.randn(*self.shape(), gen=gen, dtype=self.dtype) for _ in range(3))

    def workload(self) -> Workload:
        b, h, s, d = self.shape()
        item = torch.empty(0, dtype=self.dtype).element_size()
        # The causal half of QK^T and PV (what the function needs), Q/K/V read, O written.
        return Workload(bytes=4 * b * h * s * d * item, flops=4 * b * h * s * s * d / 2,
                        flops_dtype="bf16" if self.ctx.is_cuda else "fp32",
                        units=b * s, unit_name="tokens")
