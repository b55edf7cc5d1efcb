"""Shared by the `model_compile` pair: a 4-layer Llama-style decoder forward, bf16, no grad.

d_model 2048, 16 heads of 128, SwiGLU width 5632, batch 4 x 2048 tokens (_transformer.py).
Inference only (forward under no_grad): training compile is chapter 13's `training_standard`.
Weights are drawn in setup(); the per-call input is a batch of embeddings.

The table's time is the steady state: every compiling side compiles and warms up in
setup(). The compile itself is stored on the side as `compile_s` (seconds of the first,
compiling call) and reported apart in the README.

Tolerance: DecoderForward's (_transformer.py), from the drift measured on an H100.
"""
from __future__ import annotations

import time

import torch

from ch14._transformer import Config, DecoderForward, build
from core.benchmark import BenchContext

CFG = Config(d_model=2048, n_heads=16, n_layers=4, hidden=5632, batch=4, seq=2048)


class ModelBench(DecoderForward):
    cfg = CFG
    compile_s: float = 0.0  # seconds the first (compiling) call took; 0 for eager

    def setup(self, ctx: BenchContext) -> None:
        self.model = build(self.cfg, ctx.device, ctx.seed)
        self.forward = self.model  # what run() calls: a compiled model in the variants
        self.prepare()

    def prepare(self) -> None:
        """Per-variant setup: compile self.model into self.forward and warm it up."""

    def warm_up(self) -> None:
        """Compile on throwaway data of the real shape (compilation is lazy) and time it."""
        x = self.make_inputs(self.ctx.seed)
        start = time.perf_counter()
        self.run(x)
        if self.ctx.is_cuda:
            torch.cuda.synchronize()
        self.compile_s = time.perf_counter() - start
