"""Shared by `stream_ordered_kv_cache`: one decode step over a ragged batch of KV caches.

Eight sequences in decode, with 1k to 16k tokens of context (bf16, 32 heads of 128), each
with its own KV cache ([32, 16384, 128] for K and for V, allocated and filled in setup() from
the weights' seed: the prefix a prefill would have written). One step appends each
sequence's new key and value at its position and attends its new query over the cache up to
and including it (`decode_step`). The call's inputs are the step's queries, keys and values
([8, 32, 1, 128] each); the output is the eight attention results.

Both sides run `decode_step` for each sequence, in the same order with the same kernels, so
their outputs are bit-identical; they differ in how the sequences are ordered on the GPU.
The append writes the same slots on every call, so a call's answer depends on its inputs
alone. reference() recomputes the step in float64 from the untouched prefix.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

HEADS, HEAD_DIM = 32, 128
LENGTHS = (16383, 12288, 8192, 6144, 4096, 3072, 2048, 1024)  # tokens already cached
CAPACITY = 16384


def decode_step(q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
                k_cache: torch.Tensor, v_cache: torch.Tensor, length: int) -> torch.Tensor:
    """Append one token's key and value at `length`, then attend `q` over the cache.

    q, k_new, v_new: [heads, 1, dim]; k_cache, v_cache: [heads, capacity, dim] (written at
    position `length`). Returns [heads, 1, dim].

    On CUDA the attention is pinned to the flash backend: torch's default pick here (cuDNN's
    SDPA on an H100) is not bit-reproducible from run to run (seen: one element in 32768 off
    by an ulp between two runs of the same side), and flash's forward is."""
    k_cache[:, length:length + 1].copy_(k_new)
    v_cache[:, length:length + 1].copy_(v_new)
    keys, values = k_cache[None, :, :length + 1], v_cache[None, :, :length + 1]
    backends = [SDPBackend.FLASH_ATTENTION] if q.is_cuda else [SDPBackend.MATH]
    with sdpa_kernel(backends):
        return F.scaled_dot_product_attention(q[None], keys, values)[0]


def reference_step(q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
                   k_prefix: torch.Tensor, v_prefix: torch.Tensor) -> torch.Tensor:
    """The same step in float64 without touching any cache: softmax(q·Kᵀ/√d)·V over the
    prefix plus the new token. Shapes as in decode_step, prefixes [heads, length, dim]."""
    keys = torch.cat([k_prefix, k_new], dim=1).double()
    values = torch.cat([v_prefix, v_new], dim=1).double()
    scores = q.double() @ keys.transpose(1, 2) / q.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ values


class KvCacheBench(Benchmark):
    requires = Requirements(cuda=True)
    tolerance = Tolerance(rtol=0.0, atol=0.0)  # same kernels on the same values
    # bf16 inputs and output; the kernels keep scores and softmax in fp32: the output's
    # rounding (2^-9 relative) dominates
    reference_tolerance = Tolerance(rtol=2e-2, atol=2e-3)
    lengths = LENGTHS

    def setup(self, ctx: BenchContext) -> None:
        gen = self.generator(ctx.seed)
        shape = (len(self.lengths), HEADS, CAPACITY, HEAD_DIM)
        self.k_cache = self.randn(*shape, gen=gen, dtype=torch.bfloat16)
        self.v_cache = self.randn(*shape, gen=gen, dtype=torch.bfloat16)

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        gen = self.generator(seed)
        shape = (len(self.lengths), HEADS, 1, HEAD_DIM)
        return tuple(self.randn(*shape, gen=gen, dtype=torch.bfloat16) for _ in range(3))

    def step(self, i: int, q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor
             ) -> torch.Tensor:
        """Sequence i's decode step on its own cache."""
        return decode_step(q[i], k_new[i], v_new[i], self.k_cache[i], self.v_cache[i],
                           self.lengths[i])

    def reference(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        q, k_new, v_new = inputs
        return torch.stack([reference_step(q[i], k_new[i], v_new[i], self.k_cache[i, :, :n],
                                           self.v_cache[i, :, :n])
                            for i, n in enumerate(self.lengths)])

    def workload(self) -> Workload:
        cached = sum(n + 1 for n in self.lengths)
        return Workload(bytes=2 * cached * HEADS * HEAD_DIM * 2,  # every key and value read once
                        flops=4 * cached * HEADS * HEAD_DIM, flops_dtype="bf16",
                        units=len(self.lengths), unit_name="sequences")
