"""Shared by the `kv_quantization` pair: one decode step's attention over a layer's KV cache.

32 sequences of 4096 tokens each, the shared decoder's attention geometry (ch15 SMALL: 16
query heads, 4 KV heads, head_dim 128): the bf16 cache of one layer is 256 MiB. Each call
brings the step's new token per sequence (its query, and the K/V it appends at position
4095) and returns the attention output [32, 16, 128] in bf16. Appending is part of the step:
the int8 sides quantize the new K/V inside run(), as a serving engine does on every write.

The sides differ in how the KV is stored, and so in what reads it:
- baseline: bf16 K/V, 2 bytes per value, written with two indexed copies and read by
  `F.scaled_dot_product_attention` (flash attention; the query heads of each KV head folded
  into the query axis, `sdpa_decode`): what a competent engineer writes first, and the
  library call streams the cache near the GPU's copy bandwidth;
- optimized: int8 K/V with one fp32 scale per (token, KV head) for K and for V
  (absmax / 127, symmetric): 1 byte per value + 4 per 128 values, 0.52x the bytes. No
  library kernel reads this format, so _kv_quant_kernel.py does: one launch quantizes and
  writes the new token, a split-KV decode kernel dequantizes inside its tiles (int8 -> fp16
  by the magic-number trick, scales applied to scores and probabilities), a small kernel
  merges the splits;
- optimized_dynamic: int8 except the most recent 256 tokens, kept in bf16 (where
  attention usually concentrates; the window slides as tokens arrive and the token leaving
  it is quantized once, one token per step like the static side's append). The same
  decode kernel walks the int8 part, then the window, in one launch.

Timing: CUDA-graph replay (`timing_mode = "graph"`) on every side. A decode step is a few
short kernels (~0.1 ms of GPU work), shorter than the host's eager launches of them (the
harness flagged both sides host-bound when they ran eagerly: the samples timed Python,
not the GPU), and serving engines capture their decode steps as CUDA graphs
(vLLM, SGLang, TensorRT-LLM) for that reason. Graph replay gives every side the same
treatment: the GPU's time per step; run() is capturable (no host syncs, fixed shapes,
allocations only through torch), and replaying it on the same inputs rewrites the same slot.

Goal: memory. The cache is what decides how many sequences (or how long a context) fit on
the GPU: the gate judges each side's device footprint (the cache is resident, built in
setup()); the time of the step is reported beside it. A decode step reads the whole cache,
so half the bytes also makes the step faster, by at most ~1.9x for a memory-bound kernel
and only as far as the int8 kernel streams as close to the copy bandwidth as flash
attention does on bf16. Measured on 2026-11-28: 1.62x on an H100 (the int8 step at 73% of
the copy ceiling) and 1.32x on an H200 (56%); 1.51x and 1.24x for the dynamic variant. The
time is reported, not gated, because one pair gates one goal and the capacity is what KV
quantization is deployed for (vLLM's `kv_cache_dtype="fp8"`, TensorRT-LLM's INT8/FP8 KV
cache). The workload's bytes are each side's own cache bytes.
`python -m ch19.sweep_kv_decode` times the decode kernels alone over their launch
parameters, against SDPA and a measured copy: on an H100, SDPA over bf16 at 94% of the
copy, the int8 kernel at 77% (79% with 4 splits); ch19/README.md has the table.

Error, measured on the CPU at this pair's GPU shape (fp32 math; two seeds): N(0, 1) keys and
values, scales absmax/127 (~0.02), rounding errs by at most half a step per value. The
outputs are softmax-weighted averages over 4096 values: mean |out| ~0.02, largest ~0.12. The
int8 cache moves them by 0.9% of their RMS, largest error 1.3e-3 to 1.8e-3 (V's rounding is
averaged down; K's perturbs each score by ~0.5% of the scores' spread). The dynamic variant
errs barely less here: random keys spread attention evenly, so the recent 256 tokens carry
only ~1/16 of it (real attention, peaked on recent tokens, gains more). The kernel adds its
own fp16 rounding of the query and the probabilities (2^-11 relative: at this shape it moved
outputs by 3.9e-5 at most, 7.5e-6 RMS, run under the Triton interpreter at fp32 output) and
the bf16 rounding of the output (up to 2.4e-4 here, as the baseline's).
Tolerance atol 4e-3 (about 2x the largest error seen), rtol 2e-2; a wrong scale or a token
read from the wrong place moves outputs by O(|out|), several times atol, and fails.
tests/test_ch19.py recomputes the error at the CPU shape and checks it against this bound.
On the CPU (supports_cpu): 3 sequences of 1024 tokens, TINY-like heads (4 query, 2 KV, D 16),
fp32, window 128 (largest int8 error there 1.7e-3); the sides run the same math in torch
(dequantize, then SDPA), since the Triton kernels run on the CPU only under the interpreter
(tests/test_ch19.py runs them there against the same math).
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

CUDA_SHAPE = dict(batch=32, seq=4096, heads=16, kv_heads=4, head_dim=128, window=256)
CPU_SHAPE = dict(batch=3, seq=1024, heads=4, kv_heads=2, head_dim=16, window=128)
KV_QUANT_TOLERANCE = Tolerance(rtol=2e-2, atol=4e-3)


def quantize_per_token(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x [..., D] -> (int8 [..., D], fp32 scale [...]): symmetric, scale = absmax / 127."""
    scale = (x.float().abs().amax(-1) / 127.0).clamp_min(1e-8)
    q = torch.round(x.float() / scale[..., None]).clamp_(-127, 127).to(torch.int8)
    return q, scale


def dequantize(q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return (q.float() * scale[..., None]).to(dtype)


def sdpa_decode(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """q [B, H, D] over k/v [B, Hkv, L, D]: GQA by folding each KV head's query heads into
    the query axis (the decoder's `cached_attention` fold; every token is visible)."""
    b, h, d = q.shape
    hkv = k.shape[1]
    out = F.scaled_dot_product_attention(q.view(b, hkv, h // hkv, d), k, v)
    return out.reshape(b, h, d)


class KVCacheDecodeBench(Benchmark):
    """The cache (built in setup from the weight seed), the step's new token (per call)."""

    supports_cpu = True
    goal = "memory"
    timing_mode = "graph"  # every side: the GPU's time per decode step (module docstring)
    requires = Requirements(modules=("triton",))
    window = 0  # recent tokens kept in bf16 (0: none); quantized sides set what they keep
    quantized = False

    @property
    def shape(self) -> dict[str, int]:
        return CUDA_SHAPE if self.ctx.is_cuda else CPU_SHAPE

    @property
    def dtype(self) -> torch.dtype:
        return torch.bfloat16 if self.ctx.is_cuda else torch.float32

    def draw_cache(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The layer's K/V in bf16, [B, Hkv, L, D]: what every side's cache holds."""
        s = self.shape
        gen = self.generator(seed)
        size = (s["batch"], s["kv_heads"], s["seq"], s["head_dim"])
        return self.randn(*size, gen=gen, dtype=self.dtype), self.randn(*size, gen=gen, dtype=self.dtype)

    def setup(self, ctx: BenchContext) -> None:
        s = self.shape
        k, v = self.draw_cache(ctx.seed)
        self.quant_len = s["seq"] - self.window if self.quantized else 0
        self.k_q = self.k_s = self.v_q = self.v_s = self.k_b = self.v_b = None
        if self.quant_len:
            self.k_q, self.k_s = quantize_per_token(k[:, :, :self.quant_len])
            self.v_q, self.v_s = quantize_per_token(v[:, :, :self.quant_len])
        if self.quant_len < s["seq"]:
            self.k_b = k[:, :, self.quant_len:].contiguous()
            self.v_b = v[:, :, self.quant_len:].contiguous()
        del k, v  # only the side's own storage stays resident
        if self.quantized and self.window:
            # The window's oldest token leaves it as each new one arrives and is quantized
            # once. (A ring buffer would store it in the int8 part; here it goes to a staging
            # slot, so every call sees the same cache.)
            b, hkv, d = s["batch"], s["kv_heads"], s["head_dim"]
            self.leave_k8, self.leave_v8 = (torch.empty(b, hkv, d, dtype=torch.int8, device=ctx.device)
                                            for _ in range(2))
            self.leave_ks, self.leave_vs = (torch.empty(b, hkv, device=ctx.device) for _ in range(2))
        if ctx.is_cuda:
            from ch19._kv_quant_kernel import default_splits

            self.splits = default_splits(s["batch"] * s["kv_heads"], s["seq"], self.sm_count())
            self.run(self.make_inputs(ctx.seed))  # compile the kernels now, not in a timed call

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        s = self.shape
        gen = self.generator(seed)
        q = self.randn(s["batch"], s["heads"], s["head_dim"], gen=gen, dtype=self.dtype)
        k_new = self.randn(s["batch"], s["kv_heads"], s["head_dim"], gen=gen, dtype=self.dtype)
        v_new = self.randn(s["batch"], s["kv_heads"], s["head_dim"], gen=gen, dtype=self.dtype)
        return q, k_new, v_new

    def append(self, k_new: torch.Tensor, v_new: torch.Tensor) -> None:
        """Write the step's token at the last position, in whichever part holds it."""
        last = self.shape["seq"] - 1
        if not self.quantized:  # the baseline: two indexed copies into the bf16 cache
            self.k_b[:, :, last] = k_new
            self.v_b[:, :, last] = v_new
            return
        w = last - self.quant_len  # the new token's row in the window (dynamic side)
        if self.ctx.is_cuda:  # one launch: quantize, write the int8 slot (and the window's)
            from ch19._kv_quant_kernel import write_token

            if self.window:
                write_token(self.k_b[:, :, 0], self.v_b[:, :, 0], self.leave_k8, self.leave_ks,
                            self.leave_v8, self.leave_vs, k_new, v_new, self.k_b[:, :, w], self.v_b[:, :, w])
            else:
                write_token(k_new, v_new, self.k_q[:, :, last], self.k_s[:, :, last],
                            self.v_q[:, :, last], self.v_s[:, :, last])
            return
        if self.window:  # the same writes in torch on the CPU
            self.leave_k8[:], self.leave_ks[:] = quantize_per_token(self.k_b[:, :, 0])
            self.leave_v8[:], self.leave_vs[:] = quantize_per_token(self.v_b[:, :, 0])
            self.k_b[:, :, w] = k_new
            self.v_b[:, :, w] = v_new
        else:
            self.k_q[:, :, last], self.k_s[:, :, last] = quantize_per_token(k_new)
            self.v_q[:, :, last], self.v_s[:, :, last] = quantize_per_token(v_new)

    def cache_as(self, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """The whole cache as [B, Hkv, L, D] of `dtype`, int8 parts dequantized (CPU path, reference)."""
        parts_k, parts_v = [], []
        if self.k_q is not None:
            parts_k.append(dequantize(self.k_q, self.k_s, dtype))
            parts_v.append(dequantize(self.v_q, self.v_s, dtype))
        if self.k_b is not None:
            parts_k.append(self.k_b.to(dtype))
            parts_v.append(self.v_b.to(dtype))
        return torch.cat(parts_k, 2), torch.cat(parts_v, 2)

    def decode(self, q: torch.Tensor, **launch: Any) -> torch.Tensor:
        """The attention read of this side's cache on the GPU (the step minus its append);
        `launch` overrides the decode kernel's parameters (ch19/sweep_kv_decode.py)."""
        if not self.quantized:  # the library call over the bf16 cache
            return sdpa_decode(q, self.k_b, self.v_b)
        from ch19._kv_quant_kernel import decode_attention

        return decode_attention(q, self.k_q, self.k_s, self.v_q, self.v_s, self.k_b, self.v_b,
                                self.shape["seq"], self.quant_len, **{"splits": self.splits, **launch})

    def run(self, inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k_new, v_new = inputs
        self.append(k_new, v_new)
        if not self.ctx.is_cuda:
            return sdpa_decode(q, *self.cache_as(q.dtype))
        return self.decode(q)

    def reference(self, inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """SDPA in fp32 over this side's cache with the step's token appended."""
        q, k_new, v_new = inputs
        self.append(k_new, v_new)
        return sdpa_decode(q.float(), *self.cache_as(torch.float32))

    def cache_bytes(self) -> int:
        parts = (self.k_q, self.k_s, self.v_q, self.v_s, self.k_b, self.v_b)
        return sum(t.numel() * t.element_size() for t in parts if t is not None)

    def workload(self) -> Workload:
        s = self.shape
        flops = 4 * s["batch"] * s["heads"] * s["seq"] * s["head_dim"]
        return Workload(bytes=self.cache_bytes(), flops=flops,
                        flops_dtype="bf16" if self.ctx.is_cuda else "fp32",
                        units=s["batch"], unit_name="sequences")
