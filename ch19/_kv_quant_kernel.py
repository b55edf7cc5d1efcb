"""Split-KV decode attention over a KV cache stored as int8 (+ per-token scales) and/or bf16.

One Triton kernel serves every side of the `kv_quantization` pair, so the pair measures the
KV cache's storage format and nothing else:
- the bf16 baseline: every token in the bf16 part (`quant_len = 0`);
- the int8 side: every token in the int8 part (`quant_len = seq_len`);
- the dynamic side: tokens [0, quant_len) int8, the recent window [quant_len, seq_len) bf16.

Grid (batch · kv_heads, splits): program (bh, s) takes the `group` query heads that share KV
head bh (grouped-query attention: each KV byte is read once for all of them, padded to 16
rows for tl.dot) and one contiguous split of the tokens (FlashDecoding's split-KV, so a
decode batch fills the GPU). Per 64-token tile it loads K and V, dequantizes int8 in
registers (int8 -> the query's dtype is exact; the per-token scale multiplies the scores
for K and the probabilities for V, because a per-token scale factors out of a dot product
over head_dim), and runs an online softmax in fp32. It writes its split's running max,
sum and unnormalized output; `combine_splits` merges the splits.

Runs on a GPU, or on the CPU under TRITON_INTERPRET=1 (tests/test_ch19.py); there the
query dtype is fp32, since the interpreter's tl.dot does not multiply bf16 correctly.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK_N = 64  # tokens per tile; window and split sizes are multiples of it


@triton.jit
def _attend_tile(q, k, v, k_scale, v_scale, valid, m_i, l_i, acc):
    """One tile's online-softmax update. q [G, D] pre-scaled by sm_scale·log2(e)."""
    s = tl.dot(q, tl.trans(k)) * k_scale[None, :]              # [G, N] fp32
    s = tl.where(valid[None, :], s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    alpha = tl.exp2(m_i - m_new)
    p = tl.exp2(s - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    pv = (p * v_scale[None, :]).to(v.dtype)
    acc = acc * alpha[:, None] + tl.dot(pv, v)
    return m_new, l_i, acc


@triton.jit
def _decode_kernel(Q, KQ, KS, VQ, VS, KB, VB, M_OUT, L_OUT, ACC_OUT,
                   qk_scale, seq_len, quant_len, quant_cap, bf16_cap, tokens_per_split,
                   GROUP: tl.constexpr, G_PAD: tl.constexpr, D: tl.constexpr,
                   BLOCK: tl.constexpr):
    bh = tl.program_id(0)
    split = tl.program_id(1)
    n_splits = tl.num_programs(1)
    offs_g = tl.arange(0, G_PAD)
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BLOCK)
    g_ok = offs_g < GROUP
    q = tl.load(Q + (bh * GROUP + offs_g[:, None]) * D + offs_d[None, :], mask=g_ok[:, None], other=0.0)
    q = (q.to(tl.float32) * qk_scale).to(Q.dtype.element_ty)
    m_i = tl.full([G_PAD], float("-inf"), tl.float32)
    l_i = tl.zeros([G_PAD], tl.float32)
    acc = tl.zeros([G_PAD, D], tl.float32)
    start = split * tokens_per_split
    end = tl.minimum(start + tokens_per_split, seq_len)
    # int8 part: tokens [start, min(end, quant_len))
    for n0 in range(start, tl.minimum(end, quant_len), BLOCK):
        n = n0 + offs_n
        ok = n < tl.minimum(end, quant_len)
        row = bh * quant_cap + n
        k = tl.load(KQ + row[:, None] * D + offs_d[None, :], mask=ok[:, None], other=0).to(q.dtype)
        v = tl.load(VQ + row[:, None] * D + offs_d[None, :], mask=ok[:, None], other=0).to(q.dtype)
        ks = tl.load(KS + row, mask=ok, other=0.0)
        vs = tl.load(VS + row, mask=ok, other=0.0)
        m_i, l_i, acc = _attend_tile(q, k, v, ks, vs, ok, m_i, l_i, acc)
    # bf16 part: tokens [max(start, quant_len), end), stored from position quant_len on
    ones = tl.full([BLOCK], 1.0, tl.float32)
    for n0 in range(tl.maximum(start, quant_len), end, BLOCK):
        n = n0 + offs_n
        ok = n < end
        row = bh * bf16_cap + (n - quant_len)
        k = tl.load(KB + row[:, None] * D + offs_d[None, :], mask=ok[:, None], other=0.0).to(q.dtype)
        v = tl.load(VB + row[:, None] * D + offs_d[None, :], mask=ok[:, None], other=0.0).to(q.dtype)
        m_i, l_i, acc = _attend_tile(q, k, v, ones, ones, ok, m_i, l_i, acc)
    out = (bh * n_splits + split) * G_PAD + offs_g
    tl.store(M_OUT + out, m_i)
    tl.store(L_OUT + out, l_i)
    tl.store(ACC_OUT + out[:, None] * D + offs_d[None, :], acc)


def combine_splits(m: torch.Tensor, l: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
    """Merge per-split (max, sum, output) [..., S], [..., S], [..., S, D] into [..., D]."""
    top = m.amax(-1, keepdim=True)
    w = torch.exp2(m - top)                       # splits that saw no token have m = -inf: weight 0
    return (acc * w[..., None]).sum(-2) / (l * w).sum(-1, keepdim=True)


def int8_decode_attention(q: torch.Tensor, k_q: torch.Tensor | None, k_s: torch.Tensor | None,
                          v_q: torch.Tensor | None, v_s: torch.Tensor | None,
                          k_b: torch.Tensor | None, v_b: torch.Tensor | None,
                          seq_len: int, quant_len: int, splits: int) -> torch.Tensor:
    """Attention of q [B, H, D] over one layer's cache; returns [B, H, D] in q's dtype.

    int8 part: k_q/v_q [B, Hkv, quant_cap, D] int8 with k_s/v_s [B, Hkv, quant_cap] fp32
    scales, holding positions [0, quant_len); bf16 part: k_b/v_b [B, Hkv, bf16_cap, D]
    holding positions [quant_len, seq_len). Either part may be None when it holds nothing.
    """
    b, h, d = q.shape
    ref = k_q if k_q is not None else k_b
    hkv = ref.shape[1]
    group = h // hkv
    g_pad = max(16, triton.next_power_of_2(group))
    tiles = triton.cdiv(seq_len, BLOCK_N)
    tokens_per_split = triton.cdiv(tiles, splits) * BLOCK_N
    splits = triton.cdiv(seq_len, tokens_per_split)
    dummy_i8 = torch.empty(1, dtype=torch.int8, device=q.device)
    dummy_f = torch.empty(1, dtype=torch.float32, device=q.device)
    dummy_b = torch.empty(1, dtype=q.dtype, device=q.device)
    quant_cap = k_q.shape[2] if k_q is not None else 0
    bf16_cap = k_b.shape[2] if k_b is not None else 0
    m = torch.empty(b * hkv, splits, g_pad, dtype=torch.float32, device=q.device)
    l = torch.empty_like(m)
    acc = torch.empty(b * hkv, splits, g_pad, d, dtype=torch.float32, device=q.device)
    _decode_kernel[(b * hkv, splits)](
        q.contiguous(), *(t if t is not None else dummy for t, dummy in
                          ((k_q, dummy_i8), (k_s, dummy_f), (v_q, dummy_i8), (v_s, dummy_f),
                           (k_b, dummy_b), (v_b, dummy_b))),
        m, l, acc, d ** -0.5 * 1.4426950408889634, seq_len, quant_len, quant_cap, bf16_cap,
        tokens_per_split, GROUP=group, G_PAD=g_pad, D=d, BLOCK=BLOCK_N)
    # [B·Hkv, S, G_PAD, ...] -> [B, H, S, ...], dropping the padded query rows
    m = m[:, :, :group].permute(0, 2, 1).reshape(b, h, splits)
    l = l[:, :, :group].permute(0, 2, 1).reshape(b, h, splits)
    acc = acc[:, :, :group].permute(0, 2, 1, 3).reshape(b, h, splits, d)
    return combine_splits(m, l, acc).to(q.dtype)
