"""Shared by the `piece_graphs` pair: one decode step of the shared decoder (ch15 SMALL).

20 sequences, each with 512-2047 tokens of context already in a `ContiguousKV` cache (the
contexts' K/V are N(0, 1) values drawn in setup; positions drawn once from the weight seed),
take one decode step: the call's input is the 20 new tokens, the output their logits
[20, 32000]. The step writes each new token's K/V at its sequence's current position and
attends over positions <= it, so the output depends only on this call's tokens (the same
cache entries are overwritten by every call; nothing carries over).

At batch 20 the step is ~250 small kernels (the decoder's norms, RoPE, projections, KV
writes/reads, SDPA, MLP; four layers), a few µs of GPU work each: Python's launches set the
pace. The sides differ only in how they launch the same kernels:

- baseline: `Decoder.decode`, eager, the step any PyTorch serving loop runs;
- optimized (piecewise CUDA graphs, as vLLM's default `PIECEWISE` cudagraph mode): the dense
  parts between attentions (embedding + layer 0's norm/QKV/RoPE; each layer's output
  projection, residual, norm, MLP, residual and the next layer's norm/QKV/RoPE; the last
  layer's tail + final norm + LM head) are 5 graphs; attention (KV write, KV read, SDPA)
  runs eagerly between them, because in a real engine its metadata (lengths, block tables)
  changes every step. Attention's output is copied into the next piece's static input.
- variant `decode_graphs` (vLLM's `FULL` mode / SGLang's decode graphs): the whole step,
  attention included, is one graph over the static cache, reading the cache to a fixed
  length (here the batch's longest context, the same length eager reads).

Graphs are captured per batch-size bucket (1, 2, 4, 8, 16, 24, 32, vLLM's list up to 32):
a batch of n runs the graph of the smallest bucket >= n, its extra rows padded (token 0,
a spare cache slot, position 0). Both graph sides do this; at batch 20 the bucket is 24, so
4 padded rows (20%) are computed and discarded: in the matmuls, weight-bound at this size,
that is nearly free; in attention, whose KV reads scale with the rows, it is +20%.
Each run() copies the tokens (and the step's slots and positions, the per-step metadata an
engine uploads) into the bucket's static buffers, replays, and returns a clone of the
static logits: those copies are part of the measured cost.

Tolerance: graphs replay the eager kernels, but the padded batch (24 rows) may pick other
GEMM kernels than 20 rows, a different bf16 rounding that four layers carry to the logits
(|logits| < ~5): rtol = 2e-2, atol = 8e-2 (ch12's decode-step tolerance).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ch15.decoder import SMALL, Block, Decoder, apply_rope, cached_attention
from ch15.kv import ContiguousKV
from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

BATCH = 20
BUCKETS = (1, 2, 4, 8, 16, 24, 32)
MIN_CTX, MAX_CTX = 512, 2048
CFG = SMALL


def bucket_for(n: int, buckets: tuple[int, ...] = BUCKETS) -> int:
    """The smallest captured batch size that holds n sequences."""
    for b in sorted(buckets):
        if b >= n:
            return b
    raise ValueError(f"batch {n} exceeds the largest captured bucket {max(buckets)}")


# -- the decode step cut at attention (same ops, same order as ch15's Attention/Block) ------
def pre_attention(block: Block, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    """Norm, QKV projection and RoPE of x [B, 1, d_model]: q [B,1,H,D], k/v [B,1,Hkv,D]."""
    cfg = block.attn.cfg
    b, t, _ = x.shape
    h, hkv, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    q, k, v = F.linear(block.attn_norm(x), block.attn.wqkv).split([h * d, hkv * d, hkv * d], dim=-1)
    return (apply_rope(q.view(b, t, h, d), cos, sin), apply_rope(k.view(b, t, hkv, d), cos, sin),
            v.view(b, t, hkv, d))


def attention(kv, layer: int, q, k, v, slots, positions, kv_len: int, visible) -> torch.Tensor:
    """KV write, KV read and SDPA: the part piecewise graphs leave eager."""
    kv.write(layer, slots, positions, k, v)
    k_all, v_all = kv.read(layer, slots, kv_len)
    return cached_attention(q, k_all, v_all, visible)


def post_attention(block: Block, x: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
    """Output projection, residual, norm, MLP, residual."""
    b, t = x.shape[:2]
    x = x + F.linear(attn.reshape(b, t, -1), block.attn.wo)
    return x + block.mlp(block.mlp_norm(x))


class DecodeStepBench(Benchmark):
    requires = Requirements(cuda=True)
    tolerance = Tolerance(rtol=2e-2, atol=8e-2)
    cfg = CFG
    batch = BATCH
    buckets = BUCKETS

    def setup(self, ctx: BenchContext) -> None:
        cfg = self.cfg
        self.model = Decoder(cfg, seed=ctx.seed, device=ctx.device)
        spare = max(self.buckets)  # slot of the padded rows
        self.kv = ContiguousKV(cfg, spare + 1, ctx.device)
        gen = self.generator(ctx.seed + 1)
        for pool in (self.kv.k, self.kv.v):
            for layer in range(cfg.n_layers):
                pool[layer] = torch.randn(pool[layer].shape, generator=gen, device=ctx.device).to(pool.dtype)
        host = torch.Generator().manual_seed(ctx.seed)
        ctx_lens = torch.randint(MIN_CTX, MAX_CTX, (self.batch,), generator=host)
        self.ctx_lens = ctx_lens.tolist()
        self.slots = torch.arange(self.batch, device=ctx.device)
        self.positions = ctx_lens.to(ctx.device)         # the new token's position = context length
        self.kv_len = max(self.ctx_lens) + 1             # the engine knows it on the host
        self.pad_slot = spare
        self.prepare()

    def prepare(self) -> None:
        """Per-side setup (graph capture); not timed."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        return torch.randint(0, self.cfg.vocab, (self.batch,), generator=self.generator(seed),
                             device=self.device)

    def eager_step(self, tokens, slots, positions) -> torch.Tensor:
        with torch.no_grad():
            return self.model.decode(tokens, self.kv, slots, positions, max_len=self.kv_len)

    def workload(self) -> Workload:
        cfg = self.cfg
        weights = (cfg.params() - cfg.vocab * cfg.d_model) * 2   # all but the embedding table
        kv_read = self.batch * self.kv_len * cfg.kv_bytes_per_token()
        attn_flops = 4 * cfg.n_layers * self.batch * self.kv_len * cfg.n_heads * cfg.head_dim
        return Workload(bytes=weights + kv_read, flops=2 * self.batch * cfg.params() + attn_flops,
                        flops_dtype="bf16", units=self.batch, unit_name="tokens")


class StaticBatch:
    """One bucket's static buffers: tokens, slots, positions (padded rows preset)."""

    def __init__(self, size: int, pad_slot: int, device: str):
        self.size = size
        self.tokens = torch.zeros(size, dtype=torch.long, device=device)
        self.slots = torch.full((size,), pad_slot, dtype=torch.long, device=device)
        self.positions = torch.zeros(size, dtype=torch.long, device=device)

    def load(self, tokens, slots, positions) -> None:
        n = tokens.shape[0]
        self.tokens[:n].copy_(tokens)
        self.slots[:n].copy_(slots)
        self.positions[:n].copy_(positions)


class GraphedDecodeBench(DecodeStepBench):
    """Capture helpers shared by the two graph sides."""

    def prepare(self) -> None:
        self.pool = torch.cuda.graph_pool_handle()  # one memory pool for every graph
        self.static = {}
        for size in sorted(self.buckets, reverse=True):  # largest first: smaller reuse its pool
            sb = StaticBatch(size, self.pad_slot, self.ctx.device)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side), torch.no_grad():
                for _ in range(2):  # cuBLAS handles and workspaces exist before capture
                    self.model.decode(sb.tokens, self.kv, sb.slots, sb.positions, max_len=self.kv_len)
            torch.cuda.current_stream().wait_stream(side)
            self.static[size] = sb
            self.capture(sb)

    def capture(self, sb: StaticBatch) -> None:
        raise NotImplementedError

    def teardown(self) -> None:
        self.static = {}  # the graphs and their buffers
