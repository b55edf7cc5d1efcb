"""Shared by `moe_overlap`: an MoE layer with a shared expert (DeepSeek-style), bf16.

DeepSeek-V2/V3 and Qwen-MoE add to the routed experts a *shared* expert that every token
goes through: out = routed(x) + shared(x). The two branches read the same input and meet
only at the final add, so they are independent work. Here the routed part is the chapter's
MoE (8 experts of 1408, top-2, d_model 2048; run the fast way of `moe_dispatch`: sort by
expert + grouped GEMM) and the shared expert is one SwiGLU MLP of hidden 2816 (DeepSeek-V2-
Lite's two shared experts of 1408, fused), on 1024 tokens: a decode step of 1024 sequences
or one prefill chunk.

Why overlap can pay here: the routed branch is a chain of small kernels (router GEMM,
softmax, top-k, argsort, bincount, gather, two grouped GEMMs over 8 uneven groups,
a scatter, the weighted sum) with tails and gaps where the GPU is partly idle; the shared
expert's dense GEMMs can fill them. At much larger token counts both branches are
GEMM-bound and the overlap buys little (the README lists the sweep).

Both sides run the same kernels on the same values and add the branches in the same order:
their outputs agree to rounding (bf16 tolerance, as `moe_dispatch`).
"""
from __future__ import annotations

from dataclasses import replace

import torch

from ch15._moe_dispatch_common import (BF16_TOLERANCE, CPU_TOKENS, REFERENCE_TOLERANCE,
                                       grouped_experts, moe_config, reference_moe, route)
from ch15.decoder import MLP, MoE
from core.benchmark import BenchContext, Benchmark, Workload

TOKENS = 1024


class SharedExpertMoeBench(Benchmark):
    supports_cpu = True
    tolerance = BF16_TOLERANCE
    reference_tolerance = REFERENCE_TOLERANCE

    def tokens(self) -> int:
        return TOKENS if self.ctx.is_cuda else CPU_TOKENS

    def setup(self, ctx: BenchContext) -> None:
        self.cfg = moe_config(ctx.device)
        gen = torch.Generator(device=ctx.device).manual_seed(ctx.seed)
        self.moe = MoE(self.cfg, gen)
        self.shared = MLP(replace(self.cfg, ffn=2 * self.cfg.ffn, n_experts=0, top_k=0), gen)
        self.w_gate_up_t = self.moe.w_gate_up.transpose(1, 2)
        self.w_down_t = self.moe.w_down.transpose(1, 2)

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(self.tokens(), self.cfg.d_model, gen=self.generator(seed),
                          dtype=self.cfg.dtype)

    def routed(self, x: torch.Tensor) -> torch.Tensor:
        weights, experts = route(x, self.moe.router, self.cfg.top_k)
        return grouped_experts(x, weights, experts, self.w_gate_up_t, self.w_down_t)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        """Float64: routed experts on the model's own routing (see moe_dispatch) + shared MLP."""
        routed = reference_moe(x, self.moe.router, self.moe.w_gate_up, self.moe.w_down,
                               self.cfg.top_k)
        gate, up = (x.double() @ self.shared.w_gate_up.double().T).chunk(2, dim=-1)
        return routed + (torch.nn.functional.silu(gate) * up) @ self.shared.w_down.double().T

    def workload(self) -> Workload:
        cfg, n = self.cfg, self.tokens()
        itemsize = torch.empty(0, dtype=cfg.dtype).element_size()
        d, f = cfg.d_model, cfg.ffn
        flops = 2 * n * cfg.top_k * 3 * d * f + 2 * n * d * cfg.n_experts + 2 * n * 3 * d * (2 * f)
        weight_bytes = (3 * d * f * cfg.n_experts + d * cfg.n_experts + 3 * d * 2 * f) * itemsize
        return Workload(bytes=weight_bytes + 2 * n * d * itemsize, flops=flops,
                        flops_dtype="bf16" if cfg.dtype == torch.bfloat16 else "fp32",
                        units=n, unit_name="tokens")
