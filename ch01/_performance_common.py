"""Shared by the `performance` pair: a small decoder-only transformer and one AdamW step.

Every side builds the same model from ctx.seed in setup() and takes the same batch of tokens
from make_inputs(seed), so they start from identical weights and data; they differ only in
how the step is executed (the matmul precision, autocast, the optimizer's implementation).
run() advances the model and the optimizer (`stateful`).
"""
from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from core.benchmark import BenchContext, Benchmark, Workload


@dataclass(frozen=True)
class Config:
    vocab: int
    d_model: int
    heads: int
    layers: int
    seq: int
    batch: int  # sequences per optimizer step, all of them in one forward/backward pass

    @property
    def tokens(self) -> int:
        return self.batch * self.seq


# d_model 1024: at 512 the bf16 step's GPU work (~10 ms) was no longer than the host's time to
# launch its ~400 eager kernels, so the bf16 sides timed the host's Python and their speedup
# moved with the host CPU (3.4x-4.4x on one H200 machine). At 1024 the GPU work per step is
# several times the host's launch time, and the headline is the GPU's.
CUDA_CONFIG = Config(vocab=8192, d_model=1024, heads=16, layers=4, seq=512, batch=32)
CPU_CONFIG = Config(vocab=128, d_model=32, heads=2, layers=1, seq=16, batch=8)  # a smoke test
# `bench run --mode smoke` on a GPU: the same code paths at a size that verifies in a second
SMOKE_CONFIG = Config(vocab=2048, d_model=256, heads=4, layers=2, seq=128, batch=8)
LR = 3e-4  # AdamW's learning rate on every side


@contextmanager
def tf32_matmuls(enabled: bool) -> Iterator[None]:
    """TF32 on or off for fp32 matmuls and cuDNN for the block's duration, then restored.

    The flags are process-wide and every side of the pair runs in the same process, so a
    side sets them inside its run() and never leaves them changed for the next side.
    """
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    previous = matmul.allow_tf32, cudnn.allow_tf32
    matmul.allow_tf32 = cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        matmul.allow_tf32, cudnn.allow_tf32 = previous


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention, then a 4x GELU MLP."""

    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.out = nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (batch, heads, seq, head_dim)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos = nn.Embedding(cfg.seq, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.heads) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        self.head.weight = self.tok.weight  # tied embeddings, as in GPT-2
        for module in self.modules():  # GPT-2 init: loss starts near ln(vocab)
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tok(tokens) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def token_losses(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy of every token, shape (batch, seq), fp32 even under autocast.

    The step's loss is their mean. run() returns them as well as the mean: a mean over
    thousands of tokens at init is ~ln(vocab) whatever the weights or data, so only the
    per-token values show that both sides computed the same thing.
    """
    logits = model(inputs)
    losses = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")
    return losses.float().view(targets.shape)


class TrainingStep(Benchmark):
    """One optimizer step over `cfg.batch` sequences; subclasses define run() and the optimizer."""

    supports_cpu = True
    stateful = True  # each run() is one optimizer step: it updates the weights and AdamW state

    @property
    def cfg(self) -> Config:
        if not self.ctx.is_cuda:
            return CPU_CONFIG
        return SMOKE_CONFIG if self.ctx.smoke else CUDA_CONFIG

    def setup(self, ctx: BenchContext) -> None:
        torch.manual_seed(ctx.seed)  # weights: built on the CPU, so identical on every device
        self.model = TinyGPT(self.cfg).to(ctx.device)
        self.optimizer = self.make_optimizer(ctx)

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets): the batch's tokens and the same tokens shifted by one."""
        g = torch.Generator().manual_seed(seed)  # drawn on the CPU, so identical on every device
        tokens = torch.randint(self.cfg.vocab, (self.cfg.batch, self.cfg.seq + 1), generator=g)
        tokens = tokens.to(self.device)
        return tokens[:, :-1], tokens[:, 1:]

    def make_optimizer(self, ctx: BenchContext) -> torch.optim.Optimizer:
        raise NotImplementedError

    def train_step(self, batch: tuple[torch.Tensor, torch.Tensor],
                   autocast: torch.dtype | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """One optimizer step over the whole batch: (the step's mean loss, per-token losses).

        autocast: run the forward under torch.autocast at this dtype (None: as the model is,
        fp32). The loss, its gradient and the optimizer state are fp32 either way.
        """
        inputs, targets = batch
        self.optimizer.zero_grad(set_to_none=True)
        device_type = torch.device(self.device).type
        context = (nullcontext() if autocast is None
                   else torch.autocast(device_type=device_type, dtype=autocast))
        with context:
            losses = token_losses(self.model, inputs, targets)
        loss = losses.mean()
        loss.backward()
        self.optimizer.step()
        return loss.detach(), losses.detach()  # stay on the device: no host sync in the step

    def workload(self) -> Workload:
        # Headline is tokens/s. FLOPs (~6 · params · tokens) would be judged against the fp32
        # ceiling on one side and the bf16 ceiling on the other, which is no comparison.
        return Workload(units=self.cfg.tokens, unit_name="tokens")
