"""A Llama-style decoder stack shared by `model_compile` and `regional_compile` (forward only).

Each block is pre-norm: RMSNorm → fused QKV projection → causal SDPA → output projection →
residual, then RMSNorm → SwiGLU MLP (one gate+up projection, silu(gate) * up, down
projection) → residual. A final RMSNorm keeps the output O(1), so one tolerance fits any depth.
No RoPE, no KV cache: the point is what the compiler does with the ops around the matmuls
(norms, the SwiGLU product, residual adds), which eager PyTorch runs as separate kernels.

Weights are drawn from a seeded generator (std 1/sqrt(fan_in)), not nn.Linear's default
init, so every side of a pair gets the same model from `ctx.seed`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from core.benchmark import Benchmark, Tolerance, Workload


@dataclass(frozen=True)
class Config:
    d_model: int
    n_heads: int
    n_layers: int
    hidden: int  # SwiGLU width (Llama: ~8/3 d_model, rounded to a multiple of 256)
    batch: int
    seq: int

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    def flops(self) -> float:
        """Matmul FLOPs of one forward; causal attention counts its lower half."""
        d, h, t = self.d_model, self.hidden, self.tokens
        per_layer = 2 * t * (4 * d * d + 3 * d * h)  # qkv + out (4 d²), gate+up + down (3 d h)
        per_layer += 2 * self.batch * self.seq * self.seq * d  # QKᵀ and PV, half of each
        return self.n_layers * per_layer


class Block(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        d = cfg.d_model
        self.n_heads = cfg.n_heads
        self.attn_norm = nn.RMSNorm(d, eps=1e-6)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.mlp_norm = nn.RMSNorm(d, eps=1e-6)
        self.gate_up = nn.Linear(d, 2 * cfg.hidden, bias=False)
        self.down = nn.Linear(cfg.hidden, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        qkv = self.qkv(self.attn_norm(x)).view(b, s, 3, self.n_heads, d // self.n_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each [b, heads, s, head_dim]
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(attn.transpose(1, 2).reshape(b, s, d))
        gate, up = self.gate_up(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Decoder(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = nn.RMSNorm(cfg.d_model, eps=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.layers:
            x = block(x)
        return self.norm(x)


def build(cfg: Config, device: str, seed: int, dtype: torch.dtype = torch.bfloat16) -> Decoder:
    """The model in eval mode with seeded weights, on `device` in `dtype`."""
    with torch.device(device):
        model = Decoder(cfg).to(dtype).eval()
    gen = torch.Generator(device=device).manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:  # linear weights; RMSNorm scales stay at one
                w = torch.randn(p.shape, generator=gen, device=device) / math.sqrt(p.shape[1])
                p.copy_(w.to(dtype))
    return model.requires_grad_(False)


def hidden_states(cfg: Config, device: str, seed: int, dtype: torch.dtype = torch.bfloat16
                  ) -> torch.Tensor:
    """One batch of input embeddings [batch, seq, d_model] drawn from `seed`."""
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(cfg.batch, cfg.seq, cfg.d_model, generator=gen, device=device)
    return x.to(dtype)


class DecoderForward(Benchmark):
    """The contract both decoder pairs share: a batch of embeddings in, the stack's forward
    under no_grad out. Subclasses set `cfg` and, in setup(), `self.forward`.

    Tolerance: a compiled side keeps fp32 inside its fused kernels where eager rounds every
    op's output to bf16 (and max-autotune's Triton GEMMs sum in another order than cuBLAS),
    so activations drift by a few bf16 ulps per block; the output is the final RMSNorm's
    (O(1)). Measured on an H100: model_compile_max_autotune had 1 of 16.8M elements off by
    0.053 (4 blocks), regional_compile 579 of 8.4M by up to 0.075 (24 blocks), about ten
    bf16 ulps of the largest values. rtol = atol = 0.1; a wrong or skipped block moves every
    element by O(1)."""

    cfg: Config
    tolerance = Tolerance(rtol=0.1, atol=0.1)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return hidden_states(self.cfg, self.device, seed)

    def run(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.forward(x)

    def workload(self) -> Workload:
        return Workload(flops=self.cfg.flops(), flops_dtype="bf16", units=self.cfg.tokens,
                        unit_name="tokens")

