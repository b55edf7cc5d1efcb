"""Split-KV decode attention over a KV cache stored as int8 (+ per-token scales) and/or bf16.

One decode step reads the whole cache once and does ~4 FLOPs per byte of int8 KV, so the
kernel has one job: keep HBM streaming. Three launches per step, each a short listing:

1. `_write_token_kernel` (one program per sequence and KV head): quantizes one token's K
   and V (scale = absmax / 127, round half to even, exactly `quantize_per_token`) and
   writes them into the cache slot, plus, for the dynamic layout, the new token into the
   bf16 window. One launch instead of ~20 small torch ops.
2. `_decode_kernel`, grid (batch · kv_heads, splits): program (bh, s) takes the `group`
   query heads that share KV head bh (grouped-query attention: each KV byte is read once
   for all of them) and one contiguous split of the tokens (FlashDecoding's split-KV: 128
   (sequence, KV head) pairs alone would leave most of the 132 SMs idle; with 8 splits,
   1024 programs fill every SM several times over). Per BLOCK_N-token tile it loads K
   (already transposed, [D, BLOCK_N], so no layout shuffle before the dot) and V, converts
   int8 to fp16 in registers, and runs an online softmax in fp32 (log2 domain). A
   per-token scale factors out of a dot product over head_dim, so K's scale multiplies the
   scores and V's the probabilities: no dequantized copy of the cache is ever made. The
   token loops have plain bounds, so Triton software-pipelines them (`num_stages` tiles in
   flight through cp.async). tokens_per_split is a multiple of BLOCK_N: only the last tile
   of a part can be partial.
3. `_combine_kernel`, one program per query head: FlashDecoding's reduce. Each split wrote
   its running max m, sum l and unnormalized output; with M = max m_s and w_s = 2^(m_s − M),
   out = Σ w_s acc_s / Σ w_s l_s.

Where the time goes, and the choices that follow (H100, 32 × 4 KV heads × 4096 tokens × 128):
- The 4 query heads of a group are padded to 16 rows for tl.dot (the smallest MMA tile).
  The tensor cores do 4x the useful work and are still far from busy; the waste would
  matter only in registers, which BLOCK_N bounds.
- int8 -> float conversion throughput. A plain cast (`x.to(tl.float16)`) is one I2F per
  value, and the SM converts 16 values per clock: by that rate 128 MiB of int8 KV is ~36 µs
  of I2F alone on an H100, most of the ~46 µs its bytes take at the copy bandwidth. The
  magic-number trick builds the fp16 bits instead: 0x6400 | (x + 128) is the fp16 number
  1024 + (x + 128), exactly, so one subtraction of 1152 gives x. In PTX that is one xor,
  two byte permutes (prmt) and two packed fp16 subtractions per 4 values, on pipes that
  run 4x faster than I2F.
  `convert` picks the path: "asm" (that PTX, the GPU default), "bits" (the same trick in
  Triton ops, which the interpreter can run), "cast" (the plain I2F cast, for the sweep).
- fp16, not bf16, operands on the int8 path: bf16's 8-bit significand cannot hold 1024 +
  255 exactly, fp16's 11 bits can; and fp16 rounds probabilities 8x finer than bf16.
- The bf16 part (the dynamic layout's recent window; the whole cache for a bf16 run)
  goes through the same kernel: a second loop, compiled only when that part exists.

Runs on a GPU, or on the CPU under TRITON_INTERPRET=1 (tests/test_ch19.py); there the bf16
part is given in fp32, since the interpreter's tl.dot does not multiply bf16 correctly.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _int8_to_fp16(x, CONVERT: tl.constexpr):
    """int8 -> fp16, exactly, without one I2F per value (see the module docstring)."""
    if CONVERT == "asm":
        # 4 int8 per 32-bit register ($2, value i in byte i): flip the sign bits (x + 128 as
        # unsigned bytes); prmt builds two fp16 pairs, byte i under a 0x64 byte (selector
        # nibbles index the bytes of {0x64646464, t}: 0-3 t, 4-7 0x64); subtract 1152 from
        # each half. $0 holds values 0 and 1, $1 values 2 and 3, low half first.
        return tl.inline_asm_elementwise(
            asm="""{
            .reg .b32 t, c;
            xor.b32 t, $2, 0x80808080;
            prmt.b32 $0, t, 0x64646464, 0x5140;
            prmt.b32 $1, t, 0x64646464, 0x7362;
            mov.b32 c, 0x64806480;
            sub.f16x2 $0, $0, c;
            sub.f16x2 $1, $1, c;
            }""",
            constraints="=r,=r,r", args=[x], dtype=tl.float16, is_pure=True, pack=4)
    elif CONVERT == "bits":
        biased = (x.to(tl.uint8, bitcast=True) ^ 0x80).to(tl.uint16) | 0x6400  # 1024 + x + 128
        return biased.to(tl.float16, bitcast=True) - 1152.0
    else:
        return x.to(tl.float16)


@triton.jit
def _attend_tile(q, kt, v, k_scale, v_scale, ok, m_i, l_i, acc):
    """One tile's online-softmax update. q [G_PAD, D] pre-scaled by sm_scale·log2(e),
    kt [D, BLOCK_N], v [BLOCK_N, D] in the dot's dtype, scales [BLOCK_N] fp32."""
    s = tl.dot(q, kt) * k_scale[None, :]                        # [G_PAD, BLOCK_N] fp32
    s = tl.where(ok[None, :], s, float("-inf"))                 # the part's last tile only
    m_new = tl.maximum(m_i, tl.max(s, 1))
    alpha = tl.exp2(m_i - m_new)
    p = tl.exp2(s - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None] + tl.dot((p * v_scale[None, :]).to(v.dtype), v)
    return m_new, l_i, acc


@triton.jit
def _decode_kernel(Q, K8, K_SCALE, V8, V_SCALE, KB, VB, M_OUT, L_OUT, ACC_OUT,
                   qk_scale, seq_len, quant_len, quant_cap, bf16_cap, tokens_per_split,
                   GROUP: tl.constexpr, G_PAD: tl.constexpr, D: tl.constexpr,
                   BLOCK_N: tl.constexpr, HAS_INT8: tl.constexpr, HAS_BF16: tl.constexpr,
                   CONVERT: tl.constexpr):
    bh = tl.program_id(0)
    split = tl.program_id(1)
    offs_g = tl.arange(0, G_PAD)
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BLOCK_N)
    g_ok = offs_g < GROUP
    q = tl.load(Q + (bh * GROUP + offs_g[:, None]) * D + offs_d[None, :], mask=g_ok[:, None], other=0.0)
    q = q.to(tl.float32) * qk_scale
    m_i = tl.full([G_PAD], float("-inf"), tl.float32)
    l_i = tl.zeros([G_PAD], tl.float32)
    acc = tl.zeros([G_PAD, D], tl.float32)
    start = split * tokens_per_split
    end = tl.minimum(start + tokens_per_split, seq_len)
    if HAS_INT8:  # tokens [start, min(end, quant_len)), stored as int8 with per-token scales
        q16 = q.to(tl.float16)
        head = bh.to(tl.int64) * quant_cap
        k_ptr, v_ptr = K8 + head * D, V8 + head * D
        ks_ptr, vs_ptr = K_SCALE + head, V_SCALE + head
        stop = tl.minimum(end, quant_len)
        for n0 in range(start, stop, BLOCK_N):
            n = n0 + offs_n
            ok = n < stop
            kt = tl.load(k_ptr + n[None, :] * D + offs_d[:, None], mask=ok[None, :], other=0)
            v = tl.load(v_ptr + n[:, None] * D + offs_d[None, :], mask=ok[:, None], other=0)
            ks = tl.load(ks_ptr + n, mask=ok, other=0.0)
            vs = tl.load(vs_ptr + n, mask=ok, other=0.0)
            m_i, l_i, acc = _attend_tile(q16, _int8_to_fp16(kt, CONVERT), _int8_to_fp16(v, CONVERT),
                                         ks, vs, ok, m_i, l_i, acc)
    if HAS_BF16:  # tokens [max(start, quant_len), end), stored from row 0 of the bf16 part on
        qb = q.to(KB.dtype.element_ty)
        head = bh.to(tl.int64) * bf16_cap
        k_ptr, v_ptr = KB + head * D, VB + head * D
        ones = tl.full([BLOCK_N], 1.0, tl.float32)
        for n0 in range(tl.maximum(start, quant_len), end, BLOCK_N):
            n = n0 + offs_n
            ok = n < end
            row = n - quant_len
            kt = tl.load(k_ptr + row[None, :] * D + offs_d[:, None], mask=ok[None, :], other=0.0)
            v = tl.load(v_ptr + row[:, None] * D + offs_d[None, :], mask=ok[:, None], other=0.0)
            m_i, l_i, acc = _attend_tile(qb, kt, v, ones, ones, ok, m_i, l_i, acc)
    out = (bh * tl.num_programs(1) + split) * GROUP + offs_g    # partials [B·Hkv, splits, GROUP]
    tl.store(M_OUT + out, m_i, mask=g_ok)
    tl.store(L_OUT + out, l_i, mask=g_ok)
    tl.store(ACC_OUT + out[:, None] * D + offs_d[None, :], acc, mask=g_ok[:, None])


@triton.jit
def _combine_kernel(M, L, ACC, OUT, n_splits, GROUP: tl.constexpr, D: tl.constexpr,
                    S_PAD: tl.constexpr):
    head = tl.program_id(0)                  # b·H + h = (b·Hkv + h // GROUP)·GROUP + h % GROUP
    bh = head // GROUP
    offs_s = tl.arange(0, S_PAD)
    offs_d = tl.arange(0, D)
    s_ok = offs_s < n_splits
    row = (bh * n_splits + offs_s) * GROUP + head % GROUP
    m = tl.load(M + row, mask=s_ok, other=float("-inf"))
    l = tl.load(L + row, mask=s_ok, other=0.0)
    acc = tl.load(ACC + row[:, None] * D + offs_d[None, :], mask=s_ok[:, None], other=0.0)
    w = tl.exp2(m - tl.max(m, 0))            # padding splits have m = -inf: weight 0
    out = tl.sum(acc * w[:, None], 0) / tl.sum(l * w, 0)
    tl.store(OUT + head * D + offs_d, out.to(OUT.dtype.element_ty))


@triton.jit
def _quantize_row(SRC, DST, SCALE, D: tl.constexpr):
    """One token's D values -> int8 + fp32 scale, bit for bit `quantize_per_token`."""
    x = tl.load(SRC + tl.arange(0, D)).to(tl.float32)
    scale = tl.maximum(tl.math.div_rn(tl.max(tl.abs(x), 0), 127.0), 1e-8)
    y = tl.math.div_rn(x, scale)
    y = (y + 12582912.0) - 12582912.0        # round half to even, as torch.round: 1.5·2^23
    tl.store(DST + tl.arange(0, D), tl.minimum(tl.maximum(y, -127.0), 127.0).to(tl.int8))
    tl.store(SCALE, scale)


@triton.jit
def _write_token_kernel(K_SRC, V_SRC, src_stride, K8, K_SCALE, V8, V_SCALE, q_stride, s_stride,
                        K_NEW, V_NEW, KB, VB, b_stride, D: tl.constexpr, COPY_NEW: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    _quantize_row(K_SRC + bh * src_stride, K8 + bh * q_stride, K_SCALE + bh * s_stride, D)
    _quantize_row(V_SRC + bh * src_stride, V8 + bh * q_stride, V_SCALE + bh * s_stride, D)
    if COPY_NEW:  # the dynamic layout: the new token enters the bf16 window as it is
        offs = tl.arange(0, D)
        tl.store(KB + bh * b_stride + offs, tl.load(K_NEW + bh * D + offs))
        tl.store(VB + bh * b_stride + offs, tl.load(V_NEW + bh * D + offs))


def write_token(k_src: torch.Tensor, v_src: torch.Tensor, k8: torch.Tensor, k_scale: torch.Tensor,
                v8: torch.Tensor, v_scale: torch.Tensor, k_new: torch.Tensor | None = None,
                v_new: torch.Tensor | None = None, kb: torch.Tensor | None = None,
                vb: torch.Tensor | None = None) -> None:
    """Quantize one token per (sequence, KV head): k_src/v_src [B, Hkv, D] (any row stride)
    into k8/v8 [B, Hkv, D] int8 and k_scale/v_scale [B, Hkv] (slices of the cache, strided);
    with k_new/v_new [B, Hkv, D], also copy them into kb/vb [B, Hkv, D] (bf16 slots)."""
    b, hkv, d = k_src.shape
    copy = k_new is not None
    kn, vn, kb_, vb_ = (k_new.contiguous(), v_new.contiguous(), kb, vb) if copy else (k_src,) * 4
    for kt, vt in ((k_src, v_src), (k8, v8), (k_scale, v_scale), (kb_, vb_)):  # K's strides serve V
        assert kt.stride() == vt.stride() and kt.stride(0) == hkv * kt.stride(1), \
            "K and V slots alike, with B and Hkv flattening to one index"
        assert kt.dim() == 2 or kt.stride(2) == 1
    _write_token_kernel[(b * hkv,)](
        k_src, v_src, k_src.stride(1), k8, k_scale, v8, v_scale, k8.stride(1), k_scale.stride(1),
        kn, vn, kb_, vb_, kb_.stride(1), D=d, COPY_NEW=copy)


def default_splits(pairs: int, seq_len: int, sm_count: int) -> int:
    """About 8 programs per SM: two or more waves at the 3-5 programs an SM holds at once
    (registers and shared memory decide), so the last wave's tail is short; more splits
    only add partials to write and merge (`python -m ch19.sweep_kv_decode` tries both ways)."""
    return max(1, min(triton.cdiv(seq_len, 64), round(8 * sm_count / pairs)))


def decode_attention(q: torch.Tensor, k_q: torch.Tensor | None, k_s: torch.Tensor | None,
                     v_q: torch.Tensor | None, v_s: torch.Tensor | None,
                     k_b: torch.Tensor | None, v_b: torch.Tensor | None,
                     seq_len: int, quant_len: int, splits: int, block_n: int = 64,
                     num_warps: int = 4, num_stages: int = 3, convert: str | None = None
                     ) -> torch.Tensor:
    """Attention of q [B, H, D] over one layer's cache; returns [B, H, D] in q's dtype.

    int8 part: k_q/v_q [B, Hkv, quant_cap, D] int8 with k_s/v_s [B, Hkv, quant_cap] fp32
    scales, holding positions [0, quant_len); bf16 part: k_b/v_b [B, Hkv, bf16_cap, D]
    holding positions [quant_len, seq_len). Either part may be None when it holds nothing.
    `convert`: "asm" (default on a GPU), "bits" (default elsewhere) or "cast".
    """
    b, h, d = q.shape
    ref = k_q if k_q is not None else k_b
    hkv = ref.shape[1]
    group = h // hkv
    has_int8, has_bf16 = quant_len > 0, quant_len < seq_len
    assert (k_q is not None) == has_int8 and (k_b is not None) == has_bf16
    for t in (q, k_q, k_s, v_q, v_s, k_b, v_b):
        assert t is None or t.is_contiguous()
    tiles = triton.cdiv(seq_len, block_n)
    tokens_per_split = triton.cdiv(tiles, splits) * block_n
    splits = triton.cdiv(seq_len, tokens_per_split)  # no split left without a token
    quant_cap = k_q.shape[2] if has_int8 else 0
    bf16_cap = k_b.shape[2] if has_bf16 else 0
    m = torch.empty(b * hkv, splits, group, dtype=torch.float32, device=q.device)
    l = torch.empty_like(m)
    acc = torch.empty(b * hkv, splits, group, d, dtype=torch.float32, device=q.device)
    if convert is None:
        convert = "asm" if q.is_cuda else "bits"
    _decode_kernel[(b * hkv, splits)](
        q, *(t if t is not None else q for t in (k_q, k_s, v_q, v_s, k_b, v_b)),
        m, l, acc, d ** -0.5 * 1.4426950408889634, seq_len, quant_len, quant_cap, bf16_cap,
        tokens_per_split, GROUP=group, G_PAD=max(16, triton.next_power_of_2(group)), D=d,
        BLOCK_N=block_n, HAS_INT8=has_int8, HAS_BF16=has_bf16, CONVERT=convert,
        num_warps=num_warps, num_stages=num_stages)
    out = torch.empty_like(q)
    _combine_kernel[(b * h,)](m, l, acc, out, splits, GROUP=group, D=d,
                              S_PAD=max(2, triton.next_power_of_2(splits)))
    return out
