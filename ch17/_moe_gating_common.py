"""Shared by the `moe_gating` pair: a mixture-of-experts router's gating step.

Given router logits [tokens, experts] (fp32, as the router GEMM's output is kept in most MoE
models), gating decides for every token its top-k experts, their weights (the softmax
probabilities of the chosen experts, renormalised to sum to 1, as Mixtral and Qwen-MoE do),
and each (token, expert) pair's position in that expert's input buffer: the number of earlier
tokens routed to the same expert. The positions are what a dispatch (ch15 `moe_dispatch`)
needs to scatter tokens into per-expert buffers without a sort; `tokens_per_expert` sizes
those buffers.

Sizes: 8192 tokens (one large prefill batch, or a training micro-batch) routed over 128
experts, top-8: the configuration of Qwen3-MoE's routers.

Both sides are timed by CUDA-graph replay (`timing_mode = "graph"`): gating is a few
microseconds of GPU work inside a model's layer, where the launches of the kernels around it
hide its own; timed eagerly, the fused side's samples measured the host's two Triton
launches (121 µs of host time per call), not the GPU.
The CPU size keeps the same structure (top-k > 1, several blocks of tokens) at a few dozen
tokens.

The logits are drawn so that no two experts of a token have equal probabilities: each
token's logits are a random permutation of distinct levels (normal quantiles), scaled by a
per-token temperature. Real router logits are continuous and ties are rare; here they are
impossible, so that top-k has one right answer and both sides can be compared exactly.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from core.benchmark import BenchContext, Benchmark, Tolerance, Workload


@dataclass(frozen=True)
class GatingSize:
    tokens: int
    experts: int
    top_k: int


GPU_SIZE = GatingSize(tokens=8192, experts=128, top_k=8)
CPU_SIZE = GatingSize(tokens=96, experts=16, top_k=2)

Gating = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
"""(expert ids [T, k] int64, weights [T, k] fp32, positions [T, k] int64, tokens_per_expert [E] int64)"""


def router_logits(size: GatingSize, gen: torch.Generator) -> torch.Tensor:
    """[tokens, experts] fp32 logits with distinct values in every row (see the module doc)."""
    device = gen.device
    levels = torch.special.ndtri((torch.arange(size.experts, device=device) + 0.5) / size.experts)
    ranks = torch.rand(size.tokens, size.experts, generator=gen, device=device).argsort(-1)
    temperature = 0.5 + 1.5 * torch.rand(size.tokens, 1, generator=gen, device=device)
    return levels[ranks] * temperature


def eager_gating(logits: torch.Tensor, top_k: int) -> Gating:
    """Gating as a competent engineer writes it in PyTorch: softmax, top-k, renormalise, then
    each (token, expert) pair's slot from a stable sort of the chosen expert ids (the layout
    vLLM's `moe_align_block_size` and MegaBlocks build, unfused). About a dozen kernels and a
    radix sort of tokens·k keys; every intermediate goes through memory.

    Not the one-hot form (`F.one_hot(ids).cumsum(0)`, a [tokens·k, experts] int64 matrix
    written and scanned along its long axis) that many model files use: that chain took 26 ms
    per call on an H100 at this size (this pair's first run, 2026-11-23, 235x the fused
    kernel), a strawman no one keeps once they profile it. The counts come from
    `scatter_add_`, not `bincount`, which reads its input's max back to the host (a sync,
    and no CUDA graph)."""
    experts = logits.shape[-1]
    probs = torch.softmax(logits, dim=-1)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    weights = weights / weights.sum(dim=-1, keepdim=True)            # renormalise over the k
    flat = ids.flatten()                                              # token-major: token order
    order = torch.argsort(flat, stable=True)                          # grouped by expert
    counts = torch.zeros(experts, dtype=torch.int64, device=logits.device)
    counts.scatter_add_(0, flat, torch.ones_like(flat))
    starts = counts.cumsum(0) - counts                                # each expert's first slot
    positions = torch.empty_like(flat)
    positions[order] = torch.arange(flat.numel(), device=flat.device) - starts[flat[order]]
    return ids, weights, positions.view_as(ids), counts


class GatingBench(Benchmark):
    supports_cpu = True
    timing_mode = "graph"
    # ids, positions and counts are integers (compared exactly); the weights differ only by
    # the order of fp32 sums (softmax denominator, renormalisation)
    tolerance = Tolerance(rtol=1e-5, atol=1e-6)

    @property
    def size(self) -> GatingSize:
        return GPU_SIZE if self.ctx.is_cuda else CPU_SIZE

    def setup(self, ctx: BenchContext) -> None:
        self.top_k = self.size.top_k

    def make_inputs(self, seed: int) -> torch.Tensor:
        return router_logits(self.size, self.generator(seed))

    def reference(self, logits: torch.Tensor) -> Gating:
        """float64 probabilities, and positions counted by a stable sort instead of a one-hot."""
        probs = torch.softmax(logits.double(), dim=-1)
        weights, ids = torch.topk(probs, self.top_k, dim=-1)
        weights = (weights / weights.sum(dim=-1, keepdim=True)).float()
        flat = ids.flatten()
        order = torch.argsort(flat, stable=True)                      # token order within an expert
        counts = torch.bincount(flat, minlength=logits.shape[-1])
        starts = counts.cumsum(0) - counts
        positions = torch.empty_like(flat)
        positions[order] = torch.arange(flat.numel(), device=flat.device) - starts[flat[order]]
        return ids, weights, positions.view_as(ids), counts

    def workload(self) -> Workload:
        s = self.size
        # the fewest bytes: read the logits once, write ids, weights, positions (and counts)
        moved = s.tokens * s.experts * 4 + s.tokens * s.top_k * (8 + 4 + 8) + s.experts * 8
        return Workload(bytes=moved, units=s.tokens, unit_name="tokens")
