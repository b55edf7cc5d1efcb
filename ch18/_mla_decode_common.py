"""Shared by the `mla_decode` pairs: Multi-head Latent Attention (DeepSeek-V2/V3), one decode step.

MLA caches, per token, one latent vector c_kv (d_latent = 512) plus one rotary key k_pe
(d_rope = 64) shared by all heads: 576 values per token and layer, against 2 x 16 x 128 =
4096 for the same 16 heads of plain multi-head attention. Each head's key and value are
linear in the latent: k_nope_h = c_kv W_UK[h], v_h = c_kv W_UV[h] (DeepSeek's `wkv_b`, here
`w_ukv` [d_latent, heads, nope + v]). Score of head h on token t:
    (q_nope_h . k_nope_h,t + q_pe_h . k_pe_t) / sqrt(nope + rope).

Dims: DeepSeek-V2's per-head sizes (d_latent 512, rope 64, nope 128, v 128) on the shared
decoder's width (d_model 2048, 16 heads); batch 16, 8192 tokens of context, bf16. The query
is projected straight from the hidden state (no low-rank query path, as in DeepSeek-V2-Lite).
The rope part is kept, decoupled as in the papers: the cache holds k_pe already rotated, as
an engine writes it; rotating the step's q_pe at its position is the same elementwise
operation on both sides and is left out.

The cache [B, T, 576] (c_kv then k_pe, the layout FlashMLA and vLLM keep) is state built in
setup() from the weight seed, N(0, 1) as DeepSeek's kv_norm leaves c_kv; the per-call input
is the step's hidden states x [B, d_model]; the output is the attention block's output
[B, d_model] (after W_O).

- `mla_decode` (the headline), baseline (`CachedKvMla`): the standard decode an engineer
  writes first, as DeepSeek's reference `attn_impl="naive"` path and Hugging Face's
  DeepSeek-V2/V3 attention do: each token's latent is up-projected once, when it is
  written, and the cache keeps per-head K [B, 16, T, 192] (k_nope with the shared rope key
  appended) and V [B, 16, T, 128] (built in setup() from the same latent, as that engine
  would hold it); each step projects the query and calls SDPA over that K/V. The step reads
  16 x (192 + 128) = 5120 values per token.
- `mla_decode` optimized (`AbsorbedMla`): associativity moves W_UK onto the query, q_lat_h =
  W_UK[h] q_nope_h, and W_UV after the attention, o_h = W_UV[h]^T (sum_t p_t c_kv_t):
  attention runs directly over the 576-wide latent cache as multi-query attention with 16
  query rows per sequence. This is DeepSeek's `attn_impl="absorb"` path (scores in the
  cache dtype, softmax in fp32), what vLLM's MLA backends and FlashMLA do with fused
  kernels. Two batched matmuls read the latent twice (all 576 values for the scores, the
  512 latent ones for the weighted sum).
- `mla_decode_decompress` (teaching), baseline (`DecompressMla`): cache the latent to save
  memory but keep standard attention, so up-project the whole latent cache to per-head K
  and V at every step (a [B*T, 512] x [512, 16*256] GEMM writing 1 GiB, ~550 GFLOP at the
  GPU size), concatenate the rope key onto each head, then SDPA: T x the up-projection
  FLOPs of either form above and ~3.6 GiB of traffic per step (write 1 GiB of K/V, reread
  half of it to write the 0.75 GiB K, then SDPA reads K and V). The book's mistake, tagged
  `teaching`. optimized: `AbsorbedMla`.

Workload: the bytes and FLOPs the absorbed form needs (read the latent cache once, the
weights once). Byte ratio at the GPU size: the headline baseline reads 1.25 GiB of K/V
plus 20 MiB of weights; the absorbed side needs 144 MiB of latent plus 24 MiB of weights
(7.7x fewer); in its two passes over the latent plus the fp32 softmax's scratch it moves
~330 MiB (~4x fewer). Both are bound by memory, so the gain should sit near the ratio of
bytes moved; a fused one-pass kernel (FlashMLA) would approach the ratio of bytes needed.

Tolerance: the same math reassociated; in bf16 the sides round at different points (the
decompressed K/V vs the absorbed query, bf16 scores on the absorbed side as in DeepSeek's
code). Outputs spread ~0.04 at 8k tokens (averages over ~T/e tokens through W_O); on the
CPU in bf16 at this shape (batch 1) the sides differed by up to 1e-3: rtol 5e-2, atol 3e-3,
about 7% of the outputs' spread, far below what a wrong head, a missing rope
term or a wrong scale moves (tests/test_ch18.py checks those). The float64 reference
(decompressed form) is checked against each baseline with the same tolerance; the
CPU check of 1e-3 above holds for both baselines.
On the CPU (supports_cpu): d_model 64, 4 heads, d_latent 32, rope 8, nope 16, v 16; 2 x 64 tokens; fp32.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from core.benchmark import BenchContext, Benchmark, Tolerance, Workload


@dataclass(frozen=True)
class MlaShape:
    d_model: int
    n_heads: int
    d_latent: int
    d_rope: int
    d_nope: int
    d_v: int
    batch: int
    kv_len: int
    dtype: torch.dtype

    @property
    def scale(self) -> float:
        return (self.d_nope + self.d_rope) ** -0.5


CUDA_SHAPE = MlaShape(2048, 16, 512, 64, 128, 128, batch=16, kv_len=8192, dtype=torch.bfloat16)
CPU_SHAPE = MlaShape(64, 4, 32, 8, 16, 16, batch=2, kv_len=64, dtype=torch.float32)


def mla_reference(x: torch.Tensor, cache: torch.Tensor, w_q: torch.Tensor, w_ukv: torch.Tensor,
                  w_o: torch.Tensor, s: MlaShape) -> torch.Tensor:
    """The decompressed form in float64 (the trusted answer), [B, d_model]."""
    x, cache, w_q, w_ukv, w_o = (t.double() for t in (x, cache, w_q, w_ukv, w_o))
    b, t = cache.shape[:2]
    q = (x @ w_q).view(b, s.n_heads, s.d_nope + s.d_rope)
    kv = (cache[..., :s.d_latent] @ w_ukv.flatten(1)).view(b, t, s.n_heads, s.d_nope + s.d_v)
    k_nope, v = kv.split([s.d_nope, s.d_v], dim=-1)
    scores = (torch.einsum("bhn,bthn->bht", q[..., :s.d_nope], k_nope)
              + torch.einsum("bhr,btr->bht", q[..., s.d_nope:], cache[..., s.d_latent:])) * s.scale
    o = torch.einsum("bht,bthv->bhv", scores.softmax(dim=-1), v)
    return o.reshape(b, -1) @ w_o


def decompress_kv(cache: torch.Tensor, w_ukv: torch.Tensor, s: MlaShape) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-head K [B, T, H, nope + rope] and V [B, T, H, v] from the latent cache [B, T, 576]:
    one GEMM up-projects every latent through W_UKV, and the shared rope key is appended to
    each head's k_nope (DeepSeek's naive path, token by token)."""
    b, t = cache.shape[:2]
    kv = (cache[..., :s.d_latent] @ w_ukv.flatten(1)).view(b, t, s.n_heads, s.d_nope + s.d_v)
    k_nope, v = kv.split([s.d_nope, s.d_v], dim=-1)
    k_pe = cache[..., None, s.d_latent:].expand(b, t, s.n_heads, s.d_rope)
    return torch.cat([k_nope, k_pe], dim=-1), v


class MlaDecodeBench(Benchmark):
    supports_cpu = True
    # A decode step runs inside a captured graph in every serving engine (ch16 piece_graphs).
    # Timed eagerly, the absorbed side's ten small kernels measured the host: 7.84x on an
    # H100 whose host launched them in 453 µs per step against 12.56x stored from a faster
    # host, for the same GPU work. Both sides are timed by graph replay.
    timing_mode = "graph"
    tolerance = Tolerance(rtol=5e-2, atol=3e-3)

    def shape(self) -> MlaShape:
        return CUDA_SHAPE if self.ctx.is_cuda else CPU_SHAPE

    def setup(self, ctx: BenchContext) -> None:
        s = self.shape()
        gen = self.generator(ctx.seed)
        h = s.n_heads
        self.w_q = self.randn(s.d_model, h * (s.d_nope + s.d_rope), gen=gen) / s.d_model ** 0.5
        self.w_ukv = self.randn(s.d_latent, h, s.d_nope + s.d_v, gen=gen) / s.d_latent ** 0.5
        self.w_o = self.randn(h * s.d_v, s.d_model, gen=gen) / (h * s.d_v) ** 0.5
        self.cache = self.randn(s.batch, s.kv_len, s.d_latent + s.d_rope, gen=gen)
        self.w_q, self.w_ukv, self.w_o, self.cache = (t.to(s.dtype) for t in
                                                      (self.w_q, self.w_ukv, self.w_o, self.cache))
        self.prepare()

    def prepare(self) -> None:
        """Per-side preparation of the weights (not timed)."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        s = self.shape()
        return self.randn(s.batch, s.d_model, gen=self.generator(seed), dtype=s.dtype)

    def project_query(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """q_nope [B, H, nope] and q_pe [B, H, rope] of the step's tokens (both sides)."""
        s = self.shape()
        q = (x @ self.w_q).view(x.shape[0], s.n_heads, s.d_nope + s.d_rope)
        return q[..., :s.d_nope], q[..., s.d_nope:]

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        return mla_reference(x, self.cache, self.w_q, self.w_ukv, self.w_o, self.shape()).to(x.dtype)

    def workload(self) -> Workload:
        s = self.shape()
        item = torch.empty(0, dtype=s.dtype).element_size()
        h, b, t = s.n_heads, s.batch, s.kv_len
        weights = self.w_q.numel() + self.w_ukv.numel() + self.w_o.numel()
        cache = b * t * (s.d_latent + s.d_rope)
        flops = 2 * b * (weights                                  # q, absorb W_UK / W_UV, W_O
                         + h * t * (s.d_latent + s.d_rope)        # scores over the latent
                         + h * t * s.d_latent)                    # p . c_kv
        return Workload(bytes=(weights + cache) * item, flops=flops,
                        flops_dtype="bf16" if s.dtype == torch.bfloat16 else "fp32",
                        units=b, unit_name="tokens")
