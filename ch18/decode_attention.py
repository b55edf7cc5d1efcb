"""One decode step's attention over a KV cache: what the `flexdecoding` and `gqa_decode`
pairs share.

A decode step brings one new query token per sequence, [B, H, 1, D], and attends over the
K/V the cache holds for it, [B, Hkv, T, D]. Geometry is the shared decoder's (ch15 SMALL:
16 query heads, 4 KV heads, head_dim 128, bf16); each pair picks its batch and context.
The cache is state (built in setup() from the weight seed, N(0, 1) values, as an engine's
cache is when the step begins); the per-call input is the step's queries.

Tolerance: outputs are softmax-weighted averages of N(0, 1) values over T keys. With
N(0, 1) scores about T/e keys carry the weight, so |out| is of order sqrt(e/T): ~0.01 at
32k keys, ~0.1 at the CPU's 256. Kernels that sum in different orders and round P to bf16
differently differ by about one bf16 ulp of the output: rtol 2e-2 (~2.5 ulps) and atol 5e-4
(a few percent of the 32k output's spread, far below what a dropped KV block or a
mis-grouped head moves). The float64 reference is checked with the same tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ch15.decoder import SMALL, TINY, DecoderConfig
from core.benchmark import BenchContext, Benchmark, Tolerance, Workload


@dataclass(frozen=True)
class DecodeShape:
    batch: int
    kv_len: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    dtype: torch.dtype

    @classmethod
    def of(cls, cfg: DecoderConfig, batch: int, kv_len: int) -> "DecodeShape":
        return cls(batch, kv_len, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.dtype)

    @property
    def group(self) -> int:
        """Query heads sharing one KV head."""
        return self.n_heads // self.n_kv_heads


def reference_decode(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Float64 attention of q [B, H, 1, D] over k/v [B, Hkv, T, D] (query head h reads KV
    head h // group), returned in q's dtype. The group is folded into a broadcast axis, so
    K/V are neither copied per head nor trusted to any fused kernel."""
    b, h, _, d = q.shape
    hkv = k.shape[1]
    qg = q.double().view(b, hkv, h // hkv, d)                          # [B, Hkv, g, D]
    scores = qg @ k.double().transpose(-1, -2) / d ** 0.5              # [B, Hkv, g, T]
    out = scores.softmax(dim=-1) @ v.double()                          # [B, Hkv, g, D]
    return out.view(b, h, 1, d).to(q.dtype)


class DecodeAttentionBench(Benchmark):
    """A decode step's attention; subclasses set CUDA_SHAPE / CPU_SHAPE and write run()."""

    supports_cpu = True
    tolerance = Tolerance(rtol=2e-2, atol=5e-4)
    CUDA_SHAPE = DecodeShape.of(SMALL, batch=8, kv_len=32768)
    CPU_SHAPE = DecodeShape.of(TINY, batch=2, kv_len=256)

    def shape(self) -> DecodeShape:
        return self.CUDA_SHAPE if self.ctx.is_cuda else self.CPU_SHAPE

    def setup(self, ctx: BenchContext) -> None:
        s = self.shape()
        gen = self.generator(ctx.seed)
        kv_shape = (s.batch, s.n_kv_heads, s.kv_len, s.head_dim)
        self.k = self.randn(*kv_shape, gen=gen, dtype=s.dtype)     # the cache: state, not input
        self.v = self.randn(*kv_shape, gen=gen, dtype=s.dtype)
        self.prepare()

    def prepare(self) -> None:
        """Per-side setup (compiled kernel, warm-up, graph capture); not timed."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        s = self.shape()
        return self.randn(s.batch, s.n_heads, 1, s.head_dim, gen=self.generator(seed), dtype=s.dtype)

    def reference(self, q: torch.Tensor) -> torch.Tensor:
        return reference_decode(q, self.k, self.v)

    def workload(self) -> Workload:
        s = self.shape()
        item = torch.empty(0, dtype=s.dtype).element_size()
        kv_bytes = 2 * s.batch * s.n_kv_heads * s.kv_len * s.head_dim * item   # each KV byte once
        qo_bytes = 2 * s.batch * s.n_heads * s.head_dim * item
        return Workload(bytes=kv_bytes + qo_bytes, flops=4 * s.batch * s.n_heads * s.kv_len * s.head_dim,
                        flops_dtype="bf16" if s.dtype == torch.bfloat16 else "fp32",
                        units=s.batch, unit_name="tokens")
