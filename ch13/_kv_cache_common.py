"""Shared by `kv_cache`: decoding a batch of requests token by token against a KV cache.

Each run() decodes `steps` tokens for `batch` requests whose prompts (`prefill` tokens) are
already in the cache: per token, the new key and value are appended to the cache and the
new query attends over everything cached so far (SDPA). make_inputs(seed) gives the prompt's
keys/values and every step's q/k/v, so the sides differ only in how the cache is kept:

- baseline: the cache is a tensor grown with `torch.cat` each token (what a first decode
  loop writes, and what Hugging Face's DynamicCache did): every append copies the whole cache.
- optimized: a cache preallocated once at the maximum length, written by index.
- optimized `_pooled`: one pool of cache slots shared by every batch; each run() takes
  `batch` slots from a free list and gives them back at the end.

Every side returns the attention output of every step, [steps, batch, heads, head_dim].
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.benchmark import Benchmark, Tolerance, Workload


@dataclass(frozen=True)
class Config:
    batch: int
    heads: int
    head_dim: int
    prefill: int  # prompt tokens already cached
    steps: int  # tokens decoded per run()

    @property
    def max_len(self) -> int:
        return self.prefill + self.steps


# 8 requests of a 32-head, 128-dim model (Llama-7B's attention shape), a 1k-token prompt and
# 128 new tokens: the cache grows from 134 to 151 MB (K and V), well past L2, so each cat
# copy costs HBM time, not just a launch.
CUDA_CONFIG = Config(batch=8, heads=32, head_dim=128, prefill=1024, steps=128)
CPU_CONFIG = Config(batch=2, heads=2, head_dim=16, prefill=8, steps=4)
# `bench run --mode smoke` on a GPU: the same decode loop, shorter
SMOKE_CONFIG = Config(batch=2, heads=8, head_dim=128, prefill=256, steps=16)


class KvCacheDecode(Benchmark):
    supports_cpu = True
    # Attention over ~1k random keys averages ~1k random values: outputs are ~0.05 (RMS),
    # so the bf16 default atol (1e-2) would be 20% of a typical output. Every side runs the
    # same SDPA on the same bf16 values (only where they sit in memory differs); bf16
    # rounding of the output is 2^-9 relative. 2e-3 absolute is ~4% of the RMS.
    tolerance = Tolerance(rtol=2e-2, atol=2e-3)

    @property
    def cfg(self) -> Config:
        if not self.ctx.is_cuda:
            return CPU_CONFIG
        return SMOKE_CONFIG if self.ctx.smoke else CUDA_CONFIG

    def make_inputs(self, seed: int) -> dict[str, torch.Tensor]:
        """Prompt K/V [batch, heads, prefill, d]; per-step q/k/v [steps, batch, heads, 1, d]."""
        c, gen = self.cfg, self.generator(seed)
        prompt = (c.batch, c.heads, c.prefill, c.head_dim)
        step = (c.steps, c.batch, c.heads, 1, c.head_dim)
        bf16 = torch.bfloat16
        return {"k_prompt": self.randn(*prompt, gen=gen, dtype=bf16),
                "v_prompt": self.randn(*prompt, gen=gen, dtype=bf16),
                "q": self.randn(*step, gen=gen, dtype=bf16),
                "k": self.randn(*step, gen=gen, dtype=bf16),
                "v": self.randn(*step, gen=gen, dtype=bf16)}

    def output_buffer(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.empty_like(inputs["q"])

    def reference(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Step t attends over the prompt plus steps 0..t, in float64 math (no cache at all)."""
        k = torch.cat([inputs["k_prompt"], inputs["k"].squeeze(3).permute(1, 2, 0, 3)], 2).double()
        v = torch.cat([inputs["v_prompt"], inputs["v"].squeeze(3).permute(1, 2, 0, 3)], 2).double()
        out = torch.empty_like(inputs["q"], dtype=torch.float64)
        for t in range(self.cfg.steps):
            length = self.cfg.prefill + t + 1
            out[t] = F.scaled_dot_product_attention(inputs["q"][t].double(), k[:, :, :length],
                                                    v[:, :, :length])
        return out

    def workload(self) -> Workload:
        c = self.cfg
        # Attention must read every cached K and V once per step; the rest is small.
        cached_tokens = sum(c.prefill + t + 1 for t in range(c.steps))
        return Workload(bytes=2 * 2 * c.batch * c.heads * c.head_dim * cached_tokens,
                        units=c.batch * c.steps, unit_name="tokens")
