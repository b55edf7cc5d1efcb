"""Shared by `cuda_graphs` and `graph_bandwidth`: one decode step of a small Llama-style stack.

A decode step processes one new token per sequence: for each layer, RMSNorm, a QKV
projection, the new token's K/V written into a static KV cache, attention over the cache
(SDPA), the output projection, a residual add, RMSNorm, a SwiGLU MLP and another residual
add; then a final RMSNorm. At batch 4 every kernel is small: the `cuda_graphs` config
(hidden 2048, 4 layers, ~1B-class widths) launches dozens of kernels of a few µs each, so the
host's launches, not the GPU, set the pace. `graph_bandwidth` runs the same step at
70B-class widths (hidden 8192, one layer): a few weight-streaming matmuls of ~100 µs each
dominate, the GPU is always behind the host, and a graph has nothing to hide.

Weights and the KV cache (the state of earlier tokens) are drawn in setup() from the weight
seed; each call's input is the new tokens' hidden states. The step writes the new token's
K/V into the cache's last slot and attends over all slots, so its output depends only on the
call's input (the slot is overwritten every call; nothing carries over between calls).
Precision: bf16 weights and activations, RMSNorm statistics in fp32, as inference stacks do.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

EPS = 1e-5
Cast = Callable[[torch.Tensor], torch.Tensor]
BF16_STEP_TOLERANCE = Tolerance(rtol=2e-2, atol=8e-2)  # two bf16 roundings of one step apart


@dataclass(frozen=True)
class DecodeConfig:
    batch: int = 4
    hidden: int = 2048
    heads: int = 16
    ffn: int = 5632
    layers: int = 4
    cache_len: int = 256  # KV slots per sequence (the last one takes the new token)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def weight_params(self) -> int:
        h, f = self.hidden, self.ffn
        per_layer = h * 3 * h + h * h + h * 2 * f + f * h + 2 * h
        return self.layers * per_layer + h


def _weight(gen: torch.Generator, rows: int, cols: int, device: str, dtype: torch.dtype) -> nn.Parameter:
    w = torch.randn(rows, cols, generator=gen, device=device) / cols ** 0.5  # keeps activations O(1)
    return nn.Parameter(w.to(dtype), requires_grad=False)


class DecodeStack(nn.Module):
    """The layers' weights, the static KV cache, and the step itself (`forward`)."""

    def __init__(self, cfg: DecodeConfig, gen: torch.Generator, device: str,
                 dtype: torch.dtype = torch.bfloat16):
        super().__init__()
        self.cfg = cfg
        h, f = cfg.hidden, cfg.ffn
        self.wqkv = nn.ParameterList(_weight(gen, 3 * h, h, device, dtype) for _ in range(cfg.layers))
        self.wo = nn.ParameterList(_weight(gen, h, h, device, dtype) for _ in range(cfg.layers))
        self.w_gate_up = nn.ParameterList(_weight(gen, 2 * f, h, device, dtype) for _ in range(cfg.layers))
        self.w_down = nn.ParameterList(_weight(gen, h, f, device, dtype) for _ in range(cfg.layers))
        norms = 1.0 + 0.1 * torch.randn(2 * cfg.layers + 1, h, generator=gen, device=device)
        self.norms = nn.Parameter(norms.to(dtype), requires_grad=False)
        cache = (cfg.layers, cfg.batch, cfg.heads, cfg.cache_len, cfg.head_dim)
        self.register_buffer("k_cache", torch.randn(*cache, generator=gen, device=device).to(dtype))
        self.register_buffer("v_cache", torch.randn(*cache, generator=gen, device=device).to(dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.step(x, lambda t: t)

    def step(self, x: torch.Tensor, cast: Cast) -> torch.Tensor:
        """The decode step; `cast` is applied to every weight and cache read (the identity,
        or `.double()` for reference())."""
        cfg = self.cfg
        b, heads, d = x.shape[0], cfg.heads, cfg.head_dim
        for layer in range(cfg.layers):
            h = self.rms_norm(x, cast(self.norms[2 * layer]))
            q, k, v = F.linear(h, cast(self.wqkv[layer])).view(b, 3, heads, 1, d).unbind(1)
            # cast() is the identity on the measured path: the new K/V go into the cache itself
            k_cache, v_cache = cast(self.k_cache[layer]), cast(self.v_cache[layer])
            k_cache[:, :, -1:].copy_(k)
            v_cache[:, :, -1:].copy_(v)
            attn = F.scaled_dot_product_attention(q, k_cache, v_cache)  # (b, heads, 1, d)
            x = x + F.linear(attn.reshape(b, cfg.hidden), cast(self.wo[layer]))
            h = self.rms_norm(x, cast(self.norms[2 * layer + 1]))
            gate, up = F.linear(h, cast(self.w_gate_up[layer])).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, cast(self.w_down[layer]))
        return self.rms_norm(x, cast(self.norms[-1]))

    @staticmethod
    def rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        # torch's fused kernel (fp32 statistics for bf16 input): one launch, where the step
        # spelled out by hand (cast, pow, mean, add, rsqrt, mul, cast, mul) launched 8 per
        # norm, 72 of the eager step's 120 kernels, and flattered the graph to 3.7x
        return F.rms_norm(x, (x.shape[-1],), weight, EPS)


class DecodeBench(Benchmark):
    """One decode step on the config's stack; sides differ in how they launch it."""

    config = DecodeConfig()
    requires = Requirements(cuda=True)
    # The graph side replays the very kernels eager runs: the default bf16 tolerance holds.
    # reference() is float64 math on the same bf16 weights, so it differs by the bf16 rounding
    # of every intermediate: on CPU, max |bf16 - float64| was 0.032-0.045 on outputs up to ~4
    # (a bf16 ulp there is 0.03); BF16_STEP_TOLERANCE leaves ~2x room, and a wrong layer is off by O(1).
    reference_tolerance = BF16_STEP_TOLERANCE

    def setup(self, ctx: BenchContext) -> None:
        self.model = DecodeStack(self.config, self.generator(ctx.seed), ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        cfg = self.config
        return self.randn(cfg.batch, cfg.hidden, gen=self.generator(seed), dtype=torch.bfloat16)

    @torch.no_grad()
    def reference(self, x: torch.Tensor) -> torch.Tensor:
        return self.model.step(x.double(), lambda t: t.double())

    def workload(self) -> Workload:
        cfg = self.config
        weights = cfg.weight_params() * 2
        cache = 2 * cfg.layers * cfg.batch * cfg.cache_len * cfg.hidden * 2  # K and V, read once
        flops = 2 * cfg.batch * cfg.weight_params() + 4 * cfg.layers * cfg.batch * cfg.cache_len * cfg.hidden
        return Workload(bytes=weights + cache, flops=flops, flops_dtype="bf16",
                        units=cfg.batch, unit_name="tokens")


class GraphReplay(DecodeBench):
    """The step captured once in setup() as a CUDA graph with static input/output buffers;
    each run() copies its input into the static buffer and replays (the copy is part of the
    cost), then returns a copy of the static output (the next replay overwrites it)."""

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.static_x = torch.zeros(self.config.batch, self.config.hidden, device=ctx.device,
                                    dtype=torch.bfloat16)
        side = torch.cuda.Stream()  # warm up off the default stream, as capture requires
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(3):  # cuBLAS handles and workspaces exist before capture
                self.model(self.static_x)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), torch.no_grad():
            self.static_out = self.model(self.static_x)

    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.static_x.copy_(x)
        self.graph.replay()
        return self.static_out.clone()

    def teardown(self) -> None:
        del self.graph
