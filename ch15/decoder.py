"""The shared inference model of chapters 15-20: a small Llama-style decoder with random weights.

Every inference pair (continuous batching, paged KV, chunked prefill, MoE dispatch,
speculative decoding, paged attention, CUDA graphs, prefix caching, ...) serves this one
model, so the pairs differ only in the technique they measure. The weights are drawn from a
seed (no downloads): the outputs are meaningless as language but exact as arithmetic, which
is all a benchmark needs to check that two engines compute the same thing.

The model, per layer: RMSNorm -> grouped-query attention with rotary position embeddings
(RoPE) -> residual -> RMSNorm -> SwiGLU MLP (or a top-k mixture of experts) -> residual;
then a final RMSNorm and the LM head. Two entry points serve every engine:

- `prefill(tokens [B, T], kv, slots)`: run whole prompts, write their K/V into the cache,
  return the logits of each prompt's last token (the first generated token comes from them).
- `decode(tokens [B], kv, slots, positions [B])`: one new token per sequence, attending over
  what the cache holds for it; returns logits [B, vocab].

`forward(tokens)` is the same model with no cache (all positions' logits): the reference the
cached paths are tested against. `generate()` is a plain greedy loop for references and tests.
Precision: weights and activations in `cfg.dtype` (bf16 on the GPU), RMSNorm statistics,
RoPE and router softmax in fp32, as inference stacks do.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from ch15.kv import ContiguousKV, KVCache

EPS = 1e-5


@dataclass(frozen=True)
class DecoderConfig:
    vocab: int = 32000
    d_model: int = 2048
    n_layers: int = 4
    n_heads: int = 16
    n_kv_heads: int = 4        # < n_heads: grouped-query attention (GQA), a smaller KV cache
    head_dim: int = 128
    ffn: int = 5632            # SwiGLU hidden size (per expert when n_experts > 0)
    max_seq: int = 4096        # longest sequence (prompt + output) the RoPE table and caches hold
    rope_theta: float = 10000.0
    dtype: torch.dtype = torch.bfloat16
    n_experts: int = 0         # 0: dense MLP; > 0: a mixture of experts routing each token
    top_k: int = 0             # ... to its top_k experts

    def __post_init__(self) -> None:
        if self.n_heads % self.n_kv_heads:
            raise ValueError("n_heads must be a multiple of n_kv_heads")
        if self.head_dim % 2:
            raise ValueError("RoPE rotates pairs of dimensions: head_dim must be even")
        if self.n_experts and not 0 < self.top_k <= self.n_experts:
            raise ValueError("an MoE config needs 0 < top_k <= n_experts")

    @property
    def group(self) -> int:
        """Query heads per KV head."""
        return self.n_heads // self.n_kv_heads

    def params(self) -> int:
        """Parameter count (embedding and LM head included)."""
        d, hd = self.d_model, self.head_dim
        attn = d * (self.n_heads + 2 * self.n_kv_heads) * hd + self.n_heads * hd * d
        mlp = 3 * d * self.ffn * max(self.n_experts, 1) + d * self.n_experts  # + router
        return self.n_layers * (attn + mlp + 2 * d) + 2 * self.vocab * d + d

    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes one token holds (K and V, all layers)."""
        itemsize = torch.empty(0, dtype=self.dtype).element_size()
        return 2 * self.n_layers * self.n_kv_heads * self.head_dim * itemsize


# ~310M parameters (620 MB in bf16), 8 KiB of KV per token: a decode step at batch >= 16
# is a few hundred MB of weight and KV traffic per step, GPU work rather than Python.
SMALL = DecoderConfig()
# The same widths with 8 routed experts of 1408 (top 2) instead of the dense MLP.
SMALL_MOE = replace(SMALL, n_experts=8, top_k=2, ffn=1408)
# For CPU tests: the same structure (GQA, RoPE, SwiGLU), small enough to run in milliseconds.
TINY = DecoderConfig(vocab=256, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16,
                     ffn=128, max_seq=128, dtype=torch.float32)


def _param(gen: torch.Generator, *shape: int, scale: float, dtype: torch.dtype,
           offset: float = 0.0) -> nn.Parameter:
    w = offset + scale * torch.randn(*shape, generator=gen, device=gen.device)
    return nn.Parameter(w.to(dtype), requires_grad=False)


class RMSNorm(nn.Module):
    def __init__(self, cfg: DecoderConfig, gen: torch.Generator):
        super().__init__()
        self.weight = _param(gen, cfg.d_model, scale=0.1, offset=1.0, dtype=cfg.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))  # fp32 statistics
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + EPS)
        return normed.to(x.dtype) * self.weight


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each (i, i + head_dim/2) pair of x [B, T, heads, head_dim] by its position's angle.

    cos/sin are [B, T, 1, head_dim/2]. q·k then depends on the two tokens' distance only.
    """
    x32 = x.to(torch.promote_types(x.dtype, torch.float32))
    x1, x2 = x32.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)


@dataclass
class _Pass:
    """What every layer of one prefill/decode/forward call shares."""
    positions: torch.Tensor            # [B, T] absolute position of each token
    cos: torch.Tensor                  # [B, T, 1, head_dim/2]
    sin: torch.Tensor
    kv: KVCache | None = None          # where K/V are written (None: the no-cache forward)
    slots: torch.Tensor | None = None  # [B] the sequences' cache slots
    kv_len: int | None = None          # None: attend over this call's tokens (causal);
    visible: torch.Tensor | None = None  # else over cache[:kv_len], key j visible to (b, t) iff visible[b, t, j]


def cached_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     visible: torch.Tensor) -> torch.Tensor:
    """SDPA of q [B, T, H, D] over cached k/v [B, L, Hkv, D] with a visibility mask [B, T, L].

    GQA without copying K/V: the `group` query heads that share a KV head are folded into
    the query-length axis, so each KV head is read once ([B, Hkv, group*T, D] queries).
    """
    b, t, h, d = q.shape
    hkv, length = k.shape[2], k.shape[1]
    g = h // hkv
    qg = q.view(b, t, hkv, g, d).permute(0, 2, 3, 1, 4).reshape(b, hkv, g * t, d)
    mask = visible[:, None, None].expand(b, 1, g, t, length).reshape(b, 1, g * t, length)
    out = F.scaled_dot_product_attention(qg, k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask)
    return out.view(b, hkv, g, t, d).permute(0, 3, 1, 2, 4).reshape(b, t, h, d)


class Attention(nn.Module):
    def __init__(self, cfg: DecoderConfig, gen: torch.Generator):
        super().__init__()
        self.cfg = cfg
        q_dim, kv_dim = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
        self.wqkv = _param(gen, q_dim + 2 * kv_dim, cfg.d_model, scale=cfg.d_model ** -0.5, dtype=cfg.dtype)
        self.wo = _param(gen, cfg.d_model, q_dim, scale=q_dim ** -0.5, dtype=cfg.dtype)

    def forward(self, x: torch.Tensor, p: _Pass, layer: int) -> torch.Tensor:
        cfg = self.cfg
        b, t, _ = x.shape
        h, hkv, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        q, k, v = F.linear(x, self.wqkv).split([h * d, hkv * d, hkv * d], dim=-1)
        q = apply_rope(q.view(b, t, h, d), p.cos, p.sin)
        k = apply_rope(k.view(b, t, hkv, d), p.cos, p.sin)
        v = v.view(b, t, hkv, d)
        if p.kv is not None:
            p.kv.write(layer, p.slots, p.positions, k, v)
        if p.kv_len is None:  # fresh prompts: everything needed is in this call's K/V
            out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                 is_causal=True, enable_gqa=True).transpose(1, 2)
        else:                 # decode / continued prefill: read the sequences' cached prefix
            k_all, v_all = p.kv.read(layer, p.slots, p.kv_len)
            out = cached_attention(q, k_all, v_all, p.visible)
        return F.linear(out.reshape(b, t, h * d), self.wo)


class MLP(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x)), gate and up fused in one matmul."""

    def __init__(self, cfg: DecoderConfig, gen: torch.Generator):
        super().__init__()
        self.w_gate_up = _param(gen, 2 * cfg.ffn, cfg.d_model, scale=cfg.d_model ** -0.5, dtype=cfg.dtype)
        self.w_down = _param(gen, cfg.d_model, cfg.ffn, scale=cfg.ffn ** -0.5, dtype=cfg.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = F.linear(x, self.w_gate_up).chunk(2, dim=-1)
        return F.linear(F.silu(gate) * up, self.w_down)


class MoE(nn.Module):
    """Top-k mixture of SwiGLU experts (Mixtral-style routing), the plain way.

    The router's softmax picks each token's top_k experts; their outputs are summed with the
    renormalized router weights. Experts run in a Python loop, each on the tokens a boolean
    mask selects: the `moe_dispatch` pair replaces this with sort-by-expert + a grouped GEMM.
    Expert weights are stacked ([experts, ...]) so that pair can use them as they are.
    """

    def __init__(self, cfg: DecoderConfig, gen: torch.Generator):
        super().__init__()
        self.cfg = cfg
        e, d, f = cfg.n_experts, cfg.d_model, cfg.ffn
        self.router = _param(gen, e, d, scale=d ** -0.5, dtype=cfg.dtype)
        self.w_gate_up = _param(gen, e, 2 * f, d, scale=d ** -0.5, dtype=cfg.dtype)
        self.w_down = _param(gen, e, d, f, scale=f ** -0.5, dtype=cfg.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        probs = F.linear(flat, self.router).float().softmax(dim=-1)
        weights, experts = probs.topk(self.cfg.top_k, dim=-1)                  # [N, top_k]
        weights = (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype)
        out = torch.zeros_like(flat)
        for e in range(self.cfg.n_experts):
            token, rank = (experts == e).nonzero(as_tuple=True)  # the tokens routed to e
            gate, up = F.linear(flat[token], self.w_gate_up[e]).chunk(2, dim=-1)
            y = F.linear(F.silu(gate) * up, self.w_down[e])
            out.index_add_(0, token, y * weights[token, rank, None])  # a token meets e at most once
        return out.view_as(x)


class Block(nn.Module):
    def __init__(self, cfg: DecoderConfig, gen: torch.Generator):
        super().__init__()
        self.attn_norm = RMSNorm(cfg, gen)
        self.attn = Attention(cfg, gen)
        self.mlp_norm = RMSNorm(cfg, gen)
        self.mlp = MoE(cfg, gen) if cfg.n_experts else MLP(cfg, gen)

    def forward(self, x: torch.Tensor, p: _Pass, layer: int) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), p, layer)
        return x + self.mlp(self.mlp_norm(x))


class Decoder(nn.Module):
    """The model, its weights drawn from `seed` on `device` (the same seed gives the same
    weights on one device type; CPU and CUDA generators draw different streams)."""

    def __init__(self, cfg: DecoderConfig, seed: int = 0, device: torch.device | str = "cpu"):
        super().__init__()
        self.cfg = cfg
        gen = torch.Generator(device=device).manual_seed(seed)
        self.embed = _param(gen, cfg.vocab, cfg.d_model, scale=1.0, dtype=cfg.dtype)
        self.blocks = nn.ModuleList(Block(cfg, gen) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg, gen)
        self.lm_head = _param(gen, cfg.vocab, cfg.d_model, scale=cfg.d_model ** -0.5, dtype=cfg.dtype)
        # RoPE angles for every position, once: angle[p, i] = p * theta^(-2i / head_dim)
        inv_freq = cfg.rope_theta ** (-torch.arange(0, cfg.head_dim, 2, device=device) / cfg.head_dim)
        angles = torch.arange(cfg.max_seq, device=device)[:, None] * inv_freq
        self.register_buffer("rope_cos", angles.cos(), persistent=False)
        self.register_buffer("rope_sin", angles.sin(), persistent=False)

    @property
    def device(self) -> torch.device:
        return self.embed.device

    def _pass(self, positions: torch.Tensor, **kw) -> _Pass:
        cos = self.rope_cos[positions][:, :, None]  # [B, T, 1, head_dim/2]
        sin = self.rope_sin[positions][:, :, None]
        return _Pass(positions, cos, sin, **kw)

    def _hidden(self, tokens: torch.Tensor, p: _Pass) -> torch.Tensor:
        x = self.embed[tokens]
        for layer, block in enumerate(self.blocks):
            x = block(x, p, layer)
        return x

    def _logits(self, h: torch.Tensor) -> torch.Tensor:
        return F.linear(self.norm(h), self.lm_head)

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """Causal forward over tokens [B, T] with no cache: logits [B, T, vocab] (the reference)."""
        if positions is None:
            positions = torch.arange(tokens.shape[1], device=tokens.device).expand_as(tokens)
        return self._logits(self._hidden(tokens, self._pass(positions)))

    def prefill(self, tokens: torch.Tensor, kv: KVCache, slots: torch.Tensor,
                lengths: torch.Tensor | None = None, start: torch.Tensor | None = None) -> torch.Tensor:
        """Run prompts tokens [B, T] (right-padded to T; `lengths` [B] gives each one's real
        length, default T), write their K/V into `kv` at `slots` [B], and return the logits
        of each prompt's last real token, [B, vocab].

        `start` [B] continues sequences that already hold `start` tokens in the cache
        (chunked prefill, a cached prefix): the chunk sits at positions start..start+T-1 and
        attends over the cache. Without it the prompts are fresh and attention runs causally
        over this call's K/V alone. Room for the tokens must have been reserved in `kv`;
        K/V written for padding positions are never read unmasked.
        """
        b, t = tokens.shape
        steps = torch.arange(t, device=tokens.device)
        if start is None:
            p = self._pass(steps.expand(b, t), kv=kv, slots=slots)
        else:
            positions = start[:, None] + steps
            kv_len = int(start.max()) + t  # one host sync per call
            visible = torch.arange(kv_len, device=tokens.device) <= positions[:, :, None]
            p = self._pass(positions, kv=kv, slots=slots, kv_len=kv_len, visible=visible)
        h = self._hidden(tokens, p)
        last = (lengths - 1) if lengths is not None else torch.full((b,), t - 1, device=tokens.device)
        return self._logits(h[torch.arange(b, device=tokens.device), last])

    def decode(self, tokens: torch.Tensor, kv: KVCache, slots: torch.Tensor,
               positions: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
        """One step: tokens [B] at positions [B] (each sequence's current length), with K/V
        of positions < positions[b] already in `kv`. Writes the new K/V and returns logits
        [B, vocab]. Sequences may have different lengths: attention reads the cache up to
        the longest (`max_len`, default max(positions) + 1, which costs a host sync) and
        masks each sequence to its own prefix.
        """
        kv_len = max_len if max_len is not None else int(positions.max()) + 1
        pos = positions[:, None]
        visible = (torch.arange(kv_len, device=tokens.device) <= pos)[:, None, :]  # [B, 1, L]
        p = self._pass(pos, kv=kv, slots=slots, kv_len=kv_len, visible=visible)
        return self._logits(self._hidden(tokens[:, None], p)[:, 0])

    @torch.no_grad()
    def generate(self, prompts: list[list[int]], max_new: list[int],
                 kv: KVCache | None = None) -> list[list[int]]:
        """Greedy decoding: prompt i gets max_new[i] new tokens (returned without the prompt).

        A static batch: one ragged prefill, then decode steps over the sequences still
        running (finished ones drop out, none join). Uses `kv` (a ContiguousKV sized for
        the batch by default) and frees its slots at the end.
        """
        if len(prompts) != len(max_new) or any(len(pr) == 0 for pr in prompts):
            raise ValueError("need one max_new per prompt and non-empty prompts")
        dev = self.device
        kv = kv if kv is not None else ContiguousKV(self.cfg, len(prompts), dev)
        slots = [kv.allocate(len(pr) + n) for pr, n in zip(prompts, max_new)]
        try:
            lengths = [len(pr) for pr in prompts]
            tokens = torch.zeros(len(prompts), max(lengths), dtype=torch.long)
            for i, pr in enumerate(prompts):
                tokens[i, :len(pr)] = torch.tensor(pr)
            slot_t = torch.tensor(slots, device=dev)
            nxt = self.prefill(tokens.to(dev), kv, slot_t, torch.tensor(lengths, device=dev)).argmax(-1)
            out: list[list[int]] = [[] for _ in prompts]
            active = list(range(len(prompts)))  # nxt[j] belongs to sequence active[j]
            while True:
                for i, tok in zip(active, nxt.tolist()):
                    if len(out[i]) < max_new[i]:
                        out[i].append(tok)
                keep = [j for j, i in enumerate(active) if len(out[i]) < max_new[i]]
                if not keep:
                    return out
                active = [active[j] for j in keep]
                positions = [lengths[i] + len(out[i]) - 1 for i in active]  # of the token fed now
                nxt = self.decode(nxt[torch.tensor(keep, device=dev)], kv,
                                  slot_t[torch.tensor(active, device=dev)],
                                  torch.tensor(positions, device=dev), max_len=max(positions) + 1
                                  ).argmax(-1)
        finally:
            for s in slots:
                kv.free(s)
