"""The fused gating kernel (Triton): softmax, top-k, renormalisation and buffer positions.

`fused_gating` launches two kernels and one small scan:
1. `_gate_tokens`, one program per BLOCK_T tokens: loads the block's logits once, computes the
   softmax in registers, picks the top k by k rounds of arg-max (k ≤ 8: cheaper than a sort),
   renormalises their weights, and counts, for every chosen expert, how many earlier tokens
   *of the block* chose it (a cumsum over the block's one-hot, which never leaves registers).
   It writes ids, weights, those in-block ranks and the block's per-expert counts.
2. `torch.cumsum` over the [blocks, experts] counts: where each block starts in every
   expert's buffer (a few hundred rows, not the tokens·k rows of the eager one-hot).
3. `_add_block_offsets` adds the block's start to each rank: the position.
The positions are identical to the eager cumsum's (token order), not merely a valid
assignment, so the grouped GEMM that follows sees the same layout.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK_T = 32  # tokens per program: 32 × 128 experts × 4 B = 16 KiB of logits in registers


@triton.jit
def _gate_tokens(logits_ptr, ids_ptr, weights_ptr, rank_ptr, counts_ptr, tokens, experts,
                 TOP_K: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr):
    block = tl.program_id(0)
    rows = block * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.arange(0, BLOCK_E)
    row_ok = rows < tokens
    col_ok = cols < experts
    x = tl.load(logits_ptr + rows[:, None] * experts + cols[None, :],
                mask=row_ok[:, None] & col_ok[None, :], other=0.0)
    x = tl.where(col_ok[None, :], x, float("-inf"))           # padding experts get p = 0
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    p = e / tl.sum(e, axis=1)[:, None]

    # round 1: which experts are chosen, and the sum of their probabilities
    chosen = tl.zeros([BLOCK_T, BLOCK_E], dtype=tl.int32)
    left = p
    for _ in tl.static_range(TOP_K):
        best = tl.argmax(left, axis=1)
        hit = cols[None, :] == best[:, None]
        chosen = tl.where(hit, 1, chosen)
        left = tl.where(hit, -1.0, left)
    chosen = tl.where(row_ok[:, None], chosen, 0)
    total = tl.sum(tl.where(chosen == 1, p, 0.0), axis=1)
    total = tl.where(row_ok, total, 1.0)                       # rows past the end: no 0/0
    earlier = tl.cumsum(chosen, axis=0) - chosen               # earlier tokens of this block
    tl.store(counts_ptr + block * experts + cols, tl.sum(chosen, axis=0).to(tl.int64), mask=col_ok)

    # round 2: the same picks in descending order, written out (torch.topk's order)
    left = p
    for j in tl.static_range(TOP_K):
        best = tl.argmax(left, axis=1)
        hit = cols[None, :] == best[:, None]
        weight = tl.sum(tl.where(hit, p, 0.0), axis=1) / total
        rank = tl.sum(tl.where(hit, earlier, 0), axis=1)
        out = rows * TOP_K + j
        tl.store(ids_ptr + out, best.to(tl.int64), mask=row_ok)
        tl.store(weights_ptr + out, weight, mask=row_ok)
        tl.store(rank_ptr + out, rank.to(tl.int64), mask=row_ok)
        left = tl.where(hit, -1.0, left)


@triton.jit
def _add_block_offsets(ids_ptr, rank_ptr, counts_ptr, ends_ptr, tokens, experts,
                       TOP_K: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr):
    block = tl.program_id(0)
    rows = block * BLOCK_T + tl.arange(0, BLOCK_T)
    picks = tl.arange(0, BLOCK_K)
    slots = rows[:, None] * TOP_K + picks[None, :]
    ok = (rows[:, None] < tokens) & (picks[None, :] < TOP_K)
    expert = tl.load(ids_ptr + slots, mask=ok, other=0)
    at = block * experts + expert
    start = tl.load(ends_ptr + at, mask=ok, other=0) - tl.load(counts_ptr + at, mask=ok, other=0)
    tl.store(rank_ptr + slots, tl.load(rank_ptr + slots, mask=ok, other=0) + start, mask=ok)


def fused_gating(logits: torch.Tensor, top_k: int,
                 out: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(ids, weights, positions, tokens_per_expert), equal to `eager_gating(logits, top_k)`.

    `out` = (ids, weights, positions, counts [blocks, E]) buffers to reuse (see `buffers`)."""
    tokens, experts = logits.shape
    if not 0 < top_k <= experts:
        raise ValueError(f"top_k={top_k} must be in 1..{experts}")
    logits = logits.contiguous()
    ids, weights, positions, counts = out if out is not None else buffers(tokens, experts, top_k,
                                                                          logits.device)
    blocks = triton.cdiv(tokens, BLOCK_T)
    _gate_tokens[(blocks,)](logits, ids, weights, positions, counts, tokens, experts,
                            TOP_K=top_k, BLOCK_T=BLOCK_T, BLOCK_E=triton.next_power_of_2(experts))
    ends = counts.cumsum(dim=0)                                # [blocks, E]: each block's end
    _add_block_offsets[(blocks,)](ids, positions, counts, ends, tokens, experts,
                                  TOP_K=top_k, BLOCK_T=BLOCK_T, BLOCK_K=triton.next_power_of_2(top_k))
    return ids, weights, positions, ends[-1]


def buffers(tokens: int, experts: int, top_k: int, device: torch.device | str
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    blocks = triton.cdiv(tokens, BLOCK_T)
    return (torch.empty(tokens, top_k, dtype=torch.int64, device=device),
            torch.empty(tokens, top_k, dtype=torch.float32, device=device),
            torch.empty(tokens, top_k, dtype=torch.int64, device=device),
            torch.empty(blocks, experts, dtype=torch.int64, device=device))
