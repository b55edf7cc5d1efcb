"""Shared by the `regional_compile` pair (goal: compile time): a 24-block decoder, forward.

The same Llama-style blocks as `model_compile` (_transformer.py): d_model 2048, 16 heads,
SwiGLU 5632, batch 2 x 2048 tokens, 24 identical blocks, bf16, under no_grad. Both sides
compile in setup() and warm up there (compilation is lazy: the first call compiles), so the
harness's cold start, setup() + make_inputs() + first run() in a fresh process with empty
Inductor/Triton caches, holds the whole compile, and run() is the steady-state forward.

Tolerance: both sides run Inductor's kernels for the blocks; the whole-model graph can also
fuse one block's last residual add with the next block's RMSNorm, where the regional side
rounds the residual to bf16 between blocks. DecoderForward's tolerance (_transformer.py)
covers the drift measured over 24 blocks on an H100.
"""
from __future__ import annotations

import torch

from ch14._transformer import Config, DecoderForward, build
from core.benchmark import BenchContext, Requirements

CFG = Config(d_model=2048, n_heads=16, n_layers=24, hidden=5632, batch=2, seq=2048)


class RegionalBench(DecoderForward):
    cfg = CFG
    goal = "compile_time"
    requires = Requirements(modules=("triton",))  # Inductor generates Triton kernels

    def setup(self, ctx: BenchContext) -> None:
        self.model = build(self.cfg, ctx.device, ctx.seed)
        self.forward = self.compile(self.model)
        self.run(self.make_inputs(ctx.seed))  # the first call compiles: part of setup

    def compile(self, model: torch.nn.Module) -> torch.nn.Module:
        """Return what run() calls; the sides differ only here."""
        raise NotImplementedError
