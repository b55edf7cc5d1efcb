"""Shared by `moe_dispatch`, `moe_overlap` and `expert_parallel`: one mixture-of-experts layer.

The layer is the MoE of the chapter's decoder (`ch15.decoder.MoE`, config `SMALL_MOE`): 8
SwiGLU experts of hidden 1408 on d_model 2048, top-2 routing with a softmax router and
renormalized weights, bf16 weights and activations, fp32 router softmax. Its weights are
stacked `[experts, ...]` in nn.Linear layout (w_gate_up [E, 2f, d], w_down [E, d, f]).

Two ways to run the experts, the two sides of `moe_dispatch`:

- `masked_experts` (the decoder's own loop): for each expert, `nonzero()` finds the tokens
  routed to it (a device→host sync per expert: the boolean mask's count sizes the gather),
  gathers them, runs the expert's two GEMMs, scales by the router weight and index_add_s
  the result into the output. E small GEMMs of uneven sizes, 8 host syncs, 3E+ launches.
- `grouped_experts`: sort the N·k (token, expert) assignments by expert once (a stable
  argsort), gather the rows in that order, and run each projection for all experts in ONE
  grouped GEMM (`torch._grouped_mm(rows, W[E, K, N], offs=cumulative counts)`: CUTLASS
  grouped GEMM on sm_90, available in torch ≥ 2.8), then permute the rows back to
  (token, slot) order (`index_copy_`) and sum the k slots with the router weights. No host sync at all: the
  group sizes stay on the device as the `offs` tensor.

Both are the same math on the same routing: the router (`route`) is one function both sides
call. What can differ is the GEMMs' accumulation order (cuBLAS per expert vs CUTLASS
grouped tiles): each product is accumulated in fp32 and rounded to bf16 once, so an output
may differ by a bf16 ulp or two (~0.4-0.8% relative of a value ~0.5): tolerance rtol 2e-2,
atol 1e-2, as for other bf16 GEMM chains. The k = 2 weighted sum adds the same two bf16
products into a zero row on both sides (a sum of two values does not depend on their
order), so it adds no difference of its own.
"""
from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn.functional as F

from ch15.decoder import SMALL_MOE, TINY, DecoderConfig, MoE
from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

TOKENS = 8192  # a prefill chunk of 8 x 1024 tokens, or a large decode batch summed over a step
CPU_TOKENS = 64
# The CPU config: the decoder's TINY widths with 4 experts of 32, top 2, fp32.
TINY_MOE = replace(TINY, n_experts=4, top_k=2, ffn=32)

BF16_TOLERANCE = Tolerance(rtol=2e-2, atol=1e-2)
REFERENCE_TOLERANCE = Tolerance(rtol=2e-2, atol=2e-2)  # bf16 sides against float64 experts


def moe_config(device: str) -> DecoderConfig:
    return SMALL_MOE if device.startswith("cuda") else TINY_MOE


def route(x: torch.Tensor, router: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Router of `ch15.decoder.MoE`: fp32 softmax over experts, top-k, weights renormalized
    and cast to the activations' dtype. Returns (weights [N, k], experts [N, k] int64)."""
    probs = F.linear(x, router).float().softmax(dim=-1)
    weights, experts = probs.topk(top_k, dim=-1)
    return (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype), experts


def masked_experts(x: torch.Tensor, weights: torch.Tensor, experts: torch.Tensor,
                   w_gate_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """The loop of `ch15.decoder.MoE.forward`: a boolean mask and nonzero() per expert."""
    out = torch.zeros_like(x)
    for e in range(w_gate_up.shape[0]):
        token, slot = (experts == e).nonzero(as_tuple=True)  # host sync: sizes the gather
        gate, up = F.linear(x[token], w_gate_up[e]).chunk(2, dim=-1)
        y = F.linear(F.silu(gate) * up, w_down[e])
        out.index_add_(0, token, y * weights[token, slot, None])
    return out


def grouped_mm(rows: torch.Tensor, w: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """rows [M, K] (sorted by group) @ w [G, K, N] per group -> [M, N]; group g owns rows
    offs[g-1]:offs[g] (offs int32, cumulative, on the device).

    `torch._grouped_mm` (torch >= 2.8; CUTLASS on sm_90+, a reference path on CPU). Where it
    is missing (an older torch on a CPU) the per-group loop gives the same answer; on CUDA a
    missing op is an error rather than a silent slow path, since it is what the pair measures.
    """
    if hasattr(torch, "_grouped_mm"):
        return torch._grouped_mm(rows, w, offs=offs)
    if rows.is_cuda:
        raise RuntimeError("torch._grouped_mm is missing: moe_dispatch needs torch >= 2.8")
    out, start = rows.new_empty(rows.shape[0], w.shape[2]), 0
    for g, end in enumerate(offs.tolist()):
        out[start:end] = rows[start:end] @ w[g]
        start = end
    return out


def expert_offsets(ids: torch.Tensor, n_groups: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Sort the flat expert ids: (order, offs). `order` (stable argsort) lists the
    assignments expert by expert; offs[g] is the end of group g's rows (int32 cumulative
    counts, the layout torch._grouped_mm takes)."""
    order = ids.argsort(stable=True)
    return order, expert_counts(ids, n_groups).cumsum(0).to(torch.int32)


def expert_counts(ids: torch.Tensor, n_groups: int) -> torch.Tensor:
    """How many of `ids` name each group, [n_groups] int64, with no host sync (CUDA's
    torch.bincount reads the max id on the host to size its output; a scatter-add does not)."""
    return torch.zeros(n_groups, dtype=torch.int64, device=ids.device).scatter_add_(
        0, ids, torch.ones_like(ids))


def swiglu_grouped(rows: torch.Tensor, offs: torch.Tensor, w_gate_up_t: torch.Tensor,
                   w_down_t: torch.Tensor) -> torch.Tensor:
    """The experts' SwiGLU on rows sorted by expert: two grouped GEMMs.
    w_gate_up_t [E, d, 2f] and w_down_t [E, f, d] are transposed *views* of the stacked
    nn.Linear weights (column-major B operands, which CUTLASS reads without a copy)."""
    gate, up = grouped_mm(rows, w_gate_up_t, offs).chunk(2, dim=-1)
    return grouped_mm(F.silu(gate) * up, w_down_t, offs)


def grouped_experts(x: torch.Tensor, weights: torch.Tensor, experts: torch.Tensor,
                    w_gate_up_t: torch.Tensor, w_down_t: torch.Tensor) -> torch.Tensor:
    """Sort by expert, one grouped GEMM per projection, unsort, weighted sum over the k slots."""
    k = experts.shape[1]
    order, offs = expert_offsets(experts.reshape(-1), w_gate_up_t.shape[0])
    y = swiglu_grouped(x[order // k], offs, w_gate_up_t, w_down_t)  # row i = assignment order[i]
    return combine(y, order, weights)


def padded_bmm_experts(x: torch.Tensor, weights: torch.Tensor, experts: torch.Tensor,
                       w_gate_up_t: torch.Tensor, w_down_t: torch.Tensor) -> torch.Tensor:
    """Sort by expert, then pad every expert's rows to the busiest expert's count and run each
    projection as one batched GEMM (`torch.bmm` over [E, capacity, d]): the way to batch the
    experts without a grouped GEMM. Reading the capacity costs one host sync, and the padding
    rows (~5% with balanced routing, far more with a skewed router) are computed and dropped."""
    n, k = experts.shape
    e = w_gate_up_t.shape[0]
    flat = experts.reshape(-1)
    order, offs = expert_offsets(flat, e)
    ids = flat[order]  # expert of each sorted row
    counts = expert_counts(flat, e)
    capacity = int(counts.max())  # host sync: sizes the padded batch
    pos = torch.arange(ids.numel(), device=x.device) - (offs.long() - counts)[ids]  # row within its expert
    padded = x.new_zeros(e, capacity, x.shape[1])
    padded[ids, pos] = x[order // k]
    gate, up = torch.bmm(padded, w_gate_up_t).chunk(2, dim=-1)
    y = torch.bmm(F.silu(gate) * up, w_down_t)
    return combine(y[ids, pos], order, weights)


def combine(y_sorted: torch.Tensor, order: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Expert outputs in sorted order (row i belongs to assignment order[i] of the flat
    [N * k] (token, slot) list) -> the layer output [N, d]: unsort, scale, sum the k slots."""
    n, k = weights.shape
    unsorted = torch.empty_like(y_sorted).index_copy_(0, order, y_sorted)  # back to (token, slot) order
    scaled = unsorted.view(n, k, -1) * weights[:, :, None]
    out = scaled[:, 0]
    for slot in range(1, k):  # k = 2: the masked loop's sum exactly (two values into a zero row)
        out = out + scaled[:, slot]
    return out


def reference_moe(x: torch.Tensor, router: torch.Tensor, w_gate_up: torch.Tensor,
                  w_down: torch.Tensor, top_k: int) -> torch.Tensor:
    """The trusted answer: the model's own routing (the router is not what is compared: a
    float64 router could pick another expert at a near-tie), the experts in float64."""
    weights, experts = route(x, router, top_k)
    x64, out = x.double(), torch.zeros(x.shape, dtype=torch.float64, device=x.device)
    for e in range(w_gate_up.shape[0]):
        token, slot = (experts == e).nonzero(as_tuple=True)
        gate, up = (x64[token] @ w_gate_up[e].double().T).chunk(2, dim=-1)
        y = (F.silu(gate) * up) @ w_down[e].double().T
        out.index_add_(0, token, y * weights[token, slot, None].double())
    return out


class MoeLayerBench(Benchmark):
    """One MoE layer forward on `tokens` tokens of d_model activations; the sides pick how the
    experts run (`experts(x, weights, experts)`)."""

    supports_cpu = True
    tolerance = BF16_TOLERANCE
    reference_tolerance = REFERENCE_TOLERANCE

    token_count: int | None = None  # another token count for one instance (ch15/sweep_moe_tokens.py)

    def tokens(self) -> int:
        return self.token_count or (TOKENS if self.ctx.is_cuda else CPU_TOKENS)

    def setup(self, ctx: BenchContext) -> None:
        self.cfg = moe_config(ctx.device)
        self.moe = MoE(self.cfg, torch.Generator(device=ctx.device).manual_seed(ctx.seed))
        self.router = self.moe.router
        self.w_gate_up, self.w_down = self.moe.w_gate_up, self.moe.w_down
        self.w_gate_up_t, self.w_down_t = self.w_gate_up.transpose(1, 2), self.w_down.transpose(1, 2)

    def make_inputs(self, seed: int) -> torch.Tensor:
        # the MoE's input is an RMS-normalized hidden state: unit-scale values
        return self.randn(self.tokens(), self.cfg.d_model, gen=self.generator(seed),
                          dtype=self.cfg.dtype)

    def run(self, x: torch.Tensor) -> torch.Tensor:
        weights, experts = route(x, self.router, self.cfg.top_k)
        return self.experts(x, weights, experts)

    def experts(self, x: torch.Tensor, weights: torch.Tensor, experts: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        return reference_moe(x, self.router, self.w_gate_up, self.w_down, self.cfg.top_k)

    def workload(self) -> Workload:
        cfg, n = self.cfg, self.tokens()
        itemsize = torch.empty(0, dtype=cfg.dtype).element_size()
        rows = n * cfg.top_k  # token-expert assignments
        flops = 2 * rows * 3 * cfg.d_model * cfg.ffn + 2 * n * cfg.d_model * cfg.n_experts
        weight_bytes = (3 * cfg.d_model * cfg.ffn + cfg.d_model) * cfg.n_experts * itemsize
        act_bytes = 2 * n * cfg.d_model * itemsize  # x in, out back
        return Workload(bytes=weight_bytes + act_bytes, flops=flops,
                        flops_dtype="bf16" if cfg.dtype == torch.bfloat16 else "fp32",
                        units=n, unit_name="tokens")
