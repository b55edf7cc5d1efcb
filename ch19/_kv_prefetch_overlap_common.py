"""Shared by the `kv_prefetch_overlap` pair: a decode step's attention over an int8 KV cache, in CUDA.

64 sequences of 4096 tokens, the shared decoder's attention geometry (ch15 SMALL: 16 query
heads sharing 4 KV heads, head_dim 128). The cache is int8 with one fp32 scale per 64-token
tile for K and one for V (quantized in setup() from N(0, 1) bf16 values: the cache's
state); each call brings the step's queries [64, 16, 128] bf16 and returns the attention
output [64, 16, 128] fp32. The int8 cache of one layer is 256 MiB, read once per step.

Launch: one CTA of 128 threads per (sequence, KV head), 256 CTAs, with no split of the
sequence (vLLM's PagedAttention v1 kernel, used for contexts up to 8k, likewise gives each
sequence and head one CTA); no pinned occupancy. On a
132-SM H100 that is about two CTAs per SM: each CTA's own loads are what keeps HBM busy,
which is the regime where prefetching inside the CTA pays (with many CTAs per SM the warp
scheduler hides one CTA's loads behind another's math by itself: ch10's
double_buffered_pipeline measured that). Both kernels (kv_prefetch_overlap.cu) share their
tile math, so they agree bit for bit (tolerance 1e-6 allows for nothing more than a
different FMA contraction); `reference()` recomputes the attention in float64 from the
dequantized cache, which catches a bug both kernels would share.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Requirements, Tolerance, Workload
from core.cuda_pair import CudaPair

BATCH, KV_HEADS, GROUP, HEAD_DIM, SEQ, TILE = 64, 4, 4, 128, 4096, 64


def quantize_tiles(x: torch.Tensor, tile: int = TILE) -> tuple[torch.Tensor, torch.Tensor]:
    """x [B, Hkv, L, D] -> (int8 [B, Hkv, L, D], fp32 scales [B, Hkv, L / tile]): one symmetric
    scale, absmax / 127, per `tile` consecutive tokens of one KV head."""
    b, h, length, d = x.shape
    tiles = x.float().reshape(b, h, length // tile, tile * d)
    scale = (tiles.abs().amax(-1) / 127.0).clamp_min(1e-8)
    q = torch.round(tiles / scale[..., None]).clamp_(-127, 127).to(torch.int8)
    return q.reshape(b, h, length, d), scale


def dequantize_tiles(q: torch.Tensor, scale: torch.Tensor, tile: int = TILE) -> torch.Tensor:
    return q.double() * scale.double().repeat_interleave(tile, dim=-1)[..., None]


def decode_attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """q [B, H, D] over k/v [B, Hkv, L, D] (any float dtype), in float64: [B, H, D]."""
    b, h, d = q.shape
    hkv = k.shape[1]
    qg = q.double().view(b, hkv, h // hkv, d)
    scores = torch.einsum("bkgd,bkld->bkgl", qg, k.double()) / d ** 0.5
    out = torch.einsum("bkgl,bkld->bkgd", scores.softmax(-1), v.double())
    return out.reshape(b, h, d)


class Int8DecodeBench(CudaPair):
    source = "kv_prefetch_overlap.cu"
    requires = Requirements(nvcc=True, min_compute_capability=(8, 0))  # cp.async (LDGSTS)
    tolerance = Tolerance(rtol=1e-6, atol=1e-6)
    reference_tolerance = Tolerance(rtol=1e-4, atol=1e-5)  # fp32 exp2/sums against float64

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        gen = self.generator(ctx.seed)
        size = (BATCH, KV_HEADS, SEQ, HEAD_DIM)
        self.k, self.k_scale = quantize_tiles(self.randn(*size, gen=gen, dtype=torch.bfloat16))
        self.v, self.v_scale = quantize_tiles(self.randn(*size, gen=gen, dtype=torch.bfloat16))
        self.out = torch.full((BATCH, KV_HEADS * GROUP, HEAD_DIM), float("nan"), device=ctx.device)
        self.qk_scale = HEAD_DIM ** -0.5 * 1.4426950408889634  # softmax scale, in log2 units

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(BATCH, KV_HEADS * GROUP, HEAD_DIM, gen=self.generator(seed), dtype=torch.bfloat16)

    def reference(self, q: torch.Tensor) -> torch.Tensor:
        return decode_attention_reference(q, dequantize_tiles(self.k, self.k_scale),
                                          dequantize_tiles(self.v, self.v_scale))

    def run(self, q: torch.Tensor) -> torch.Tensor:
        self.launch(q)
        return self.out

    def launch(self, q: torch.Tensor) -> None:
        raise NotImplementedError

    def workload(self) -> Workload:
        kv_bytes = 2 * BATCH * KV_HEADS * SEQ * HEAD_DIM + 2 * 4 * BATCH * KV_HEADS * (SEQ // TILE)
        io_bytes = BATCH * KV_HEADS * GROUP * HEAD_DIM * (2 + 4)
        return Workload(bytes=kv_bytes + io_bytes,
                        flops=4 * BATCH * KV_HEADS * GROUP * SEQ * HEAD_DIM, flops_dtype="fp32",
                        units=BATCH, unit_name="sequences")
