"""Shared by `prefill_decode_split`: whole-prompt prefill that stalls decodes → chunked
prefill piggybacked on decode steps (Sarathi-Serve; vLLM's and SGLang's chunked prefill,
TensorRT-LLM's chunked context).

One forward pass here, `mixed_forward`, packs `width` decode rows and one prefill chunk of
`chunk` tokens along the token axis: the linear layers (QKV, output projection, MLP, LM
head) run once over all W + C rows; attention runs per part (decode rows over their own
cached prefix; the chunk over its sequence's cache, causally). A decode step alone is
memory-bound (the weights are read for a handful of rows), so the decode rows ride along a
prefill chunk almost for free.

- Baseline: when prompts wait, their whole prompts are prefilled first, chunk after chunk,
  and the running sequences make no progress meanwhile (a 2048-token prompt stalls every
  running decode for 8 passes); then one decode pass.
- Optimized: every pass carries one chunk of the oldest waiting prompt *and* a decode row
  for every running sequence, so running requests keep emitting a token per pass.

Both sides run only `mixed_forward` at the one shape [W + C] (padding rows where a part is
empty), and split each prompt at the same chunk boundaries, so each request's arithmetic is
the same on both sides and so are its greedy tokens (see _continuous_batching_common).
The baseline's prefill is therefore in 256-token pieces rather than one pass over the
prompt; on the GPU, a 256-token chunk of this model is already compute-bound, so the pieces
cost about what one pass does (to be confirmed by the lead's measurement).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from ch15._continuous_batching_common import Engine, Seq, ServingBench, Sizes
from ch15.decoder import SMALL, TINY, Decoder, apply_rope, cached_attention
from ch15.kv import KVCache
from core.goodput import SLO, Request


@dataclass
class Chunk:
    """What one pass prefills: tokens [start, start + n) of a request's prompt."""

    slot: int
    start: int
    tokens: list[int]


@torch.no_grad()
def mixed_forward(model: Decoder, kv: KVCache, width: int, chunk_size: int, max_len: int,
                  dec_tokens: torch.Tensor, dec_slots: torch.Tensor, dec_positions: torch.Tensor,
                  decoding: bool, chunk: Chunk | None) -> torch.Tensor:
    """Logits [width + 1, vocab]: one per decode row, then the chunk's last real token's.

    dec_* are [width] (padding rows point at a scratch slot, position 0); `decoding` False
    skips the decode rows' attention (all padding), `chunk` None the chunk's.
    """
    cfg, dev = model.cfg, model.device
    h, hkv, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    w, c = width, chunk_size
    start, n = (chunk.start, len(chunk.tokens)) if chunk else (0, 1)
    chunk_tokens = torch.zeros(c, dtype=torch.long)
    if chunk:
        chunk_tokens[:n] = torch.tensor(chunk.tokens)
    host = torch.cat([chunk_tokens, torch.arange(start, start + c), torch.tensor([chunk.slot if chunk else 0])])
    chunk_tokens, chunk_pos, chunk_slot = host.to(dev).split([c, c, 1])
    tokens = torch.cat([dec_tokens, chunk_tokens])[None]  # [1, W + C]
    positions = torch.cat([dec_positions, chunk_pos])[None]
    cos, sin = model.rope_cos[positions][:, :, None], model.rope_sin[positions][:, :, None]
    kv_len = start + c
    dec_visible = (torch.arange(max_len, device=dev) <= dec_positions[:, None])[:, None, :]  # [W, 1, L]
    chunk_visible = (torch.arange(kv_len, device=dev) <= chunk_pos[:, None])[None]          # [1, C, kv_len]
    x = model.embed[tokens]
    for layer, block in enumerate(model.blocks):
        a = block.attn
        q, k, v = F.linear(block.attn_norm(x), a.wqkv).split([h * d, hkv * d, hkv * d], dim=-1)
        q = apply_rope(q.view(1, w + c, h, d), cos, sin)
        k = apply_rope(k.view(1, w + c, hkv, d), cos, sin)
        v = v.view(1, w + c, hkv, d)
        out_dec = torch.zeros(w, 1, h, d, device=dev, dtype=q.dtype)
        out_chunk = torch.zeros(1, c, h, d, device=dev, dtype=q.dtype)
        if decoding:
            kv.write(layer, dec_slots, dec_positions[:, None], k[0, :w, None], v[0, :w, None])
            k_all, v_all = kv.read(layer, dec_slots, max_len)
            out_dec = cached_attention(q[0, :w, None], k_all, v_all, dec_visible)
        if chunk:
            kv.write(layer, chunk_slot, chunk_pos[None, :n], k[:, w:w + n], v[:, w:w + n])
            k_all, v_all = kv.read(layer, chunk_slot, kv_len)
            out_chunk = cached_attention(q[:, w:], k_all, v_all, chunk_visible)
        out = torch.cat([out_dec.reshape(1, w, h * d), out_chunk.reshape(1, c, h * d)], dim=1)
        x = x + F.linear(out, a.wo)
        x = x + block.mlp(block.mlp_norm(x))
    rows = torch.cat([x[0, :w], x[0, w + n - 1:w + n]])  # [W + 1, d_model]
    return model._logits(rows)


@dataclass
class Prompt:
    """A request being prefilled: its slot and how much of its prompt is in the cache."""

    request: Request
    slot: int
    done: int = 0


class SplitEngine(Engine):
    """Continuous batching whose every pass is `mixed_forward`; subclasses schedule chunks."""

    def __init__(self, model: Decoder, kv: KVCache, width: int, chunk: int, max_len: int):
        super().__init__(model, kv, width, max_len)
        self.chunk = chunk
        self.prefilling: deque[Prompt] = deque()

    def idle(self) -> bool:
        return super().idle() and not self.prefilling

    def admit_prompts(self) -> None:
        for request, slot in self.admit(self.width - len(self.prefilling)):
            self.prefilling.append(Prompt(request, slot))

    def mixed(self, decode: bool, prefill: bool) -> list[tuple[int, int]]:
        """One pass: a decode row per running sequence (if `decode`), one chunk of the oldest
        waiting prompt (if `prefill`). Returns the tokens it produced (one host sync)."""
        seqs = [s for s in self.running if not s.done] if decode else []
        job = self.prefilling[0] if prefill and self.prefilling else None
        chunk = None
        if job:
            piece = list(job.request.prompt[job.done:job.done + self.chunk])
            chunk = Chunk(job.slot, job.done, piece)
        pad = self.width - len(seqs)
        host = torch.tensor([[s.last for s in seqs] + [0] * pad,
                             [s.slot for s in seqs] + [self.scratch] * pad,
                             [s.cached for s in seqs] + [0] * pad])
        tokens, slots, positions = host.to(self.device)
        logits = mixed_forward(self.model, self.kv, self.width, self.chunk, self.max_len,
                               tokens, slots, positions, bool(seqs), chunk)
        picked = logits.argmax(-1).tolist()
        out = []
        for seq, token in zip(seqs, picked):
            seq.cached, seq.last, seq.emitted = seq.cached + 1, token, seq.emitted + 1
            out.append((seq.request.id, token))
        if job:
            job.done += len(chunk.tokens)
            if job.done == len(job.request.prompt):  # the prompt is in: its first token
                self.prefilling.popleft()
                self.running.append(Seq(job.request, job.slot, cached=job.done, last=picked[-1]))
                out.append((job.request.id, picked[-1]))
        self.retire()
        return out


class WholePromptEngine(SplitEngine):
    """Waiting prompts are prefilled to the end first; running decodes stall meanwhile."""

    def step(self) -> list[tuple[int, int]]:
        self.admit_prompts()
        out: list[tuple[int, int]] = []
        while self.prefilling:
            out += self.mixed(decode=False, prefill=True)
        if any(not s.done for s in self.running):
            out += self.mixed(decode=True, prefill=False)
        return out


class ChunkedPrefillEngine(SplitEngine):
    """Every pass: one prompt chunk plus a decode row for every running sequence."""

    def step(self) -> list[tuple[int, int]]:
        self.admit_prompts()
        return self.mixed(decode=True, prefill=True)


class SplitBench(ServingBench):
    # GPU: prompts up to 2048 tokens in 256-token chunks; max_seq covers prompt + output.
    # Rate and SLO from a sweep on an H100 (README): at 12 requests/s whole-prompt prefill
    # keeps ~half the requests within a 12.5 ms TPOT (stalls lift their mean token gap), at 8/s
    # ~all; chunked prefill met the SLO for every request at 4-16/s. TPOT is per request: its
    # tokens' mean gap after the first.
    gpu = Sizes(cfg=replace(SMALL, max_seq=2304), width=16, requests=96, rate_rps=12.0,
                prompt_len=(256, 2048), output_len=(32, 128), batch=16,
                slo=SLO(ttft_s=1.0, tpot_s=0.0125))
    cpu = Sizes(cfg=TINY, width=4, requests=10, rate_rps=20.0, prompt_len=(4, 64),
                output_len=(4, 16), batch=6, slo=SLO(ttft_s=3.0, tpot_s=0.3))
    offline_output_len = None
    gpu_chunk, cpu_chunk = 256, 8

    @property
    def chunk(self) -> int:
        return self.gpu_chunk if self.ctx.is_cuda else self.cpu_chunk

    def engine_type(self) -> type[SplitEngine]:
        raise NotImplementedError

    def engine(self) -> Engine:
        s = self.sizes
        return self.engine_type()(self.model, self.make_kv(), s.width, self.chunk, s.cfg.max_seq)


class WholePrompt(SplitBench):
    def engine_type(self) -> type[SplitEngine]:
        return WholePromptEngine


class ChunkedPrefill(SplitBench):
    goal = "goodput"

    def engine_type(self) -> type[SplitEngine]:
        return ChunkedPrefillEngine
