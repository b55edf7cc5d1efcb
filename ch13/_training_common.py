"""Shared by `training_standard` and `memory_profiling`: a small GPT and one AdamW step.

A decoder-only transformer (pre-norm blocks: causal SDPA attention, 4x GELU MLP; tied
embeddings; GPT-2 init) trained with next-token cross-entropy. Every side builds the same
weights from ctx.seed (on the CPU, so identical on every device) and takes the same tokens
from make_inputs(seed); the sides differ only in how the step executes.

run() is one optimizer step (`stateful`): each verification starts from a fresh setup().
It returns what verifies the step (core.verify compares them elementwise, with one tolerance):
- the per-token losses of the forward pass (fp32; a mean over thousands of tokens at init
  is ~ln(vocab) whatever the weights, so only per-token values show the same computation);
- sketches of two weights' gradients (the first block's QKV projection, the last block's
  MLP output), and their two RMS values (_step_checks.sketch);
- how far the optimizer moved those two weights along their gradients' signs
  (_step_checks.alignment, ~1 for one AdamW step).

setup() may be called again on the same object (the harness re-runs it before each
verification of a stateful side). The model, its compiled form and their warm-up are made
once; later calls only reload the initial weights in place and build a fresh optimizer, so
a compiled side does not recompile and every verified step starts from the same state.
"""
from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Iterator

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from ch13._step_checks import alignment, probe_for, sketch
from core.benchmark import BenchContext, Benchmark, Tolerance, Workload


@dataclass(frozen=True)
class Config:
    vocab: int
    d_model: int
    heads: int
    layers: int
    seq: int
    batch: int

    @property
    def tokens(self) -> int:
        return self.batch * self.seq


LR = 3e-4


@contextmanager
def tf32_off() -> Iterator[None]:
    """True fp32 matmuls for the block, then the previous setting back (the flag is process
    wide, and every side runs in this process)."""
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    previous = matmul.allow_tf32, cudnn.allow_tf32
    matmul.allow_tf32 = cudnn.allow_tf32 = False
    try:
        yield
    finally:
        matmul.allow_tf32, cudnn.allow_tf32 = previous


class Block(nn.Module):
    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.out = nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    """Returns the per-token cross-entropy [batch, seq] in fp32, so a compiled side
    compiles the loss too. `amp`: bf16 autocast inside; `checkpoint_blocks`: recompute each
    block's activations in backward instead of keeping them."""

    def __init__(self, cfg: Config, amp: bool = False, checkpoint_blocks: bool = False):
        super().__init__()
        self.amp, self.checkpoint_blocks = amp, checkpoint_blocks
        self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos = nn.Embedding(cfg.seq, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.heads) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        self.head.weight = self.tok.weight  # tied, as in GPT-2
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        amp = torch.autocast(inputs.device.type, dtype=torch.bfloat16) if self.amp else nullcontext()
        with amp:
            x = self.tok(inputs) + self.pos(torch.arange(inputs.shape[1], device=inputs.device))
            for block in self.blocks:
                x = checkpoint(block, x, use_reentrant=False) if self.checkpoint_blocks else block(x)
            logits = self.head(self.ln_f(x))
        losses = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), reduction="none")
        return losses.view(targets.shape)


class TrainingStep(Benchmark):
    """One AdamW step; subclasses choose autocast, compile, checkpointing and the optimizer."""

    supports_cpu = True
    stateful = True
    slow_because = ("four sides of a stateful training step (66 s on an H200): their first "
                    "setups, two with torch.compile, 17 s; verification from fresh setups 11 s; "
                    "timing 25 s, up to the baseline's 15 s cap, since the fp32 step takes "
                    "~110 ms; the checks between rounds 6 s")
    amp = False
    compiled = False
    checkpoint_blocks = False
    tf32_off = False  # the fp32 baseline pins TF32 off (PyTorch's default for matmuls)
    cuda_config: Config
    cpu_config = Config(vocab=128, d_model=32, heads=2, layers=2, seq=16, batch=4)
    # `bench run --mode smoke` on a GPU: the same step (autocast, compile, fused AdamW,
    # checkpointing) on a model that verifies in a second
    smoke_config = Config(vocab=4096, d_model=256, heads=4, layers=2, seq=256, batch=4)

    @property
    def cfg(self) -> Config:
        if not self.ctx.is_cuda:
            return self.cpu_config
        return self.smoke_config if self.ctx.smoke else self.cuda_config

    def make_optimizer(self, params: Any) -> torch.optim.Optimizer:
        # torch's defaults: on a GPU that is the foreach (multi-tensor) implementation
        return torch.optim.AdamW(params, lr=LR)

    def initial_weights(self, seed: int) -> dict[str, torch.Tensor]:
        torch.manual_seed(seed)  # built on the CPU: identical on every device and side
        return Gpt(self.cfg).state_dict()

    def setup(self, ctx: BenchContext) -> None:
        if not hasattr(self, "model"):
            self.model = Gpt(self.cfg, amp=self.amp, checkpoint_blocks=self.checkpoint_blocks)
            self.model.to(ctx.device)
            self.step_fn = torch.compile(self.model) if self.compiled else self.model
            self.probes = [(probe_for(w.shape[0], ctx.device), probe_for(w.shape[1], ctx.device))
                           for w in self.observed()]
            if self.compiled:  # compile forward and backward now, on throwaway updates
                self.optimizer = self.make_optimizer(self.model.parameters())
                warm = self.make_inputs(ctx.seed + 1)
                for _ in range(2):
                    self.train_step(warm)
        self.model.load_state_dict(self.initial_weights(ctx.seed))  # in place: same tensors
        self.optimizer = self.make_optimizer(self.model.parameters())

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets): random tokens and the same tokens shifted by one."""
        g = torch.Generator().manual_seed(seed)  # on the CPU, so identical on every device
        tokens = torch.randint(self.cfg.vocab, (self.cfg.batch, self.cfg.seq + 1), generator=g)
        tokens = tokens.to(self.device)
        return tokens[:, :-1], tokens[:, 1:]

    def observed(self) -> list[torch.Tensor]:
        return [self.model.blocks[0].qkv.weight, self.model.blocks[-1].out.weight]

    def train_step(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        inputs, targets = batch
        self.optimizer.zero_grad(set_to_none=True)
        with tf32_off() if self.tf32_off else nullcontext():
            losses = self.step_fn(inputs, targets)
            losses.mean().backward()
        watched = self.observed()
        before = [w.detach().clone() for w in watched]  # two weights: ~3% of the parameters
        self.optimizer.step()
        grads = [sketch(w.grad, *self.probes[i]) for i, w in enumerate(watched)]
        moved = [alignment(b, w.detach(), w.grad, LR) for b, w in zip(before, watched)]
        return (losses.detach(), grads[0][0], grads[1][0],
                torch.stack([grads[0][1], grads[1][1]]), torch.stack(moved))

    def run(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        return self.train_step(batch)

    def workload(self) -> Workload:
        # tokens/s: FLOPs would be judged against the fp32 ceiling on one side and the bf16
        # ceiling on the other, which compares nothing.
        return Workload(units=self.cfg.tokens, unit_name="tokens")


# bf16 against fp32, in the units above, measured with CPU autocast (two CPU-sized models,
# 3 seeds each): per-token losses (~ln(vocab)) differ by up to 6e-4 relative; gradient
# sketches by ~1% of the RMS (std), at most 0.035; the RMS values by ~1e-3 relative;
# alignments by ~1e-5. atol 8e-2 with rtol 2e-2 leaves 2x headroom on the worst sketch value
# and a band of ~0.27 around a loss of ~9.7 (vocab 16384), yet different weights, data or a
# wrong gradient put most elements outside it.
BF16_TOLERANCE = Tolerance(rtol=2e-2, atol=8e-2)
