"""Shared by `ddp_overlap` and `gradient_compression`: one data-parallel training step.

A stack of MLP blocks (d 2048, hidden 8192, 6 blocks: 201M parameters, 805 MB of fp32
gradients) trains on 2048 tokens per rank with bf16 autocast and fused AdamW. The gradient
all-reduce takes 2.5 ms on two NVLink-connected H200s (805 MB at the measured ~320 GB/s bus
bandwidth), 22% of the baseline's 11.3 ms step. The size comes from `ch04/sweep_ddp_overlap.py`
on 2xH200 (README): below 2048 tokens per rank the step is host-bound (issuing one step costs
the host 6-7 ms at any size, and DDP's hooks add 1-2 ms), so overlapping the all-reduce with
backward cannot show; at 2048 the GPU is the bound and DDP gains 1.09-1.10x of a perfect
overlap's 1.29x; at 4096 the all-reduce is 17% of the step and the gain 1.04x.

make_inputs(seed) builds the *global* batch (every rank's shard) so that reference() can
check the distributed step against one GPU doing the whole batch. run() trains on this rank's
shard and returns the averaged gradients of the first and last block in RMS units, and the
RMS values (identical on every rank); the pair is `stateful` (the weights move), so each verification starts from setup().

The pairs built on this step (`ddp_overlap`, `dataparallel`, `gradient_compression`) run on
every GPU present (`bench run --gpus N` for fewer) and scale weakly: 2048 tokens per rank,
so the global batch and the tokens/s grow with the GPU count while each rank's compute stays
the same, and the gradient all-reduce moves 2(n-1)/n of the 805 MB per rank.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload


@dataclass(frozen=True)
class Config:
    d_model: int
    hidden: int
    blocks: int
    tokens: int  # per rank


CUDA_CONFIG = Config(d_model=2048, hidden=8192, blocks=6, tokens=2048)
CPU_CONFIG = Config(d_model=32, hidden=64, blocks=2, tokens=16)  # the gloo tests on a CPU
LR = 1e-4


class Mlp(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(cfg.d_model), nn.Linear(cfg.d_model, cfg.hidden),
                          nn.GELU(), nn.Linear(cfg.hidden, cfg.d_model))
            for _ in range(cfg.blocks))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + block(x)
        return x


class DataParallelStep(Benchmark):
    """One optimizer step; subclasses decide how the gradients are averaged (`wrap`,
    `average`)."""

    supports_cpu = True
    stateful = True
    requires = Requirements(gpus=2, scales="weak")
    slow_because = ("a training step is stateful: a checking round re-runs every side's setup() "
                    "(the model, its DDP or DataParallel wrapper, fused AdamW: 4-7 s for the "
                    "baseline's) and the baseline's again to step it to the kept call. With "
                    "core.statecheck's schedule (round 1, one later round, and a share bounded "
                    "by the baseline's setup cost) these pairs took 13-30 s on 2 and 4 H200s "
                    "(2026-11-28; 75-168 s before it), dataparallel and gradient_compression "
                    "the longest: 4 s of timing a side, three sides")
    # In RMS units (observed()): sides that sum the same bf16 gradients in other orders or
    # buckets agree within ~2% of the RMS on the CPU sizes' few thousand values; over the GPU
    # sizes' 16.7M values per gradient the tail goes further (on 4xH200 one value in 16.7M of
    # a DataParallel step was beyond 5%), so 10%. A missing all-reduce (each rank's own
    # gradient) is off by ~100% of the RMS on most values. The fp32 reference differs from
    # the bf16 sides by up to 2.3% of the RMS (CPU sizes, 3 seeds).
    tolerance = Tolerance(rtol=2e-2, atol=1e-1)
    reference_tolerance = Tolerance(rtol=2e-2, atol=6e-2)

    @property
    def cfg(self) -> Config:
        return CUDA_CONFIG if self.ctx.is_cuda else CPU_CONFIG

    def setup(self, ctx: BenchContext) -> None:
        self.model = self.fresh_model()
        self.trained = self.wrap(self.model)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=LR, fused=ctx.is_cuda)

    def fresh_model(self) -> Mlp:
        """The start weights, the same on every rank: one seed, drawn on the side's device
        (on the GPU ~1 s less per setup than 201M parameters initialized on the host, and
        every state check re-runs setup())."""
        torch.manual_seed(self.ctx.seed)
        with torch.device(self.ctx.device):
            return Mlp(self.cfg)

    def wrap(self, model: nn.Module) -> nn.Module:
        return model

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(x, target), each [world, tokens, d_model]: rank r trains on row r."""
        gen = self.generator(seed)
        shape = (dist.get_world_size(), self.cfg.tokens, self.cfg.d_model)
        return self.randn(*shape, gen=gen), self.randn(*shape, gen=gen)

    def loss(self, model: nn.Module, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Half the squared error summed over features, averaged over tokens: gradients of
        order 1/sqrt(tokens) (not 1/(tokens·d) as with a mean over every element), so one
        absolute tolerance fits both the GPU and the CPU sizes."""
        with torch.autocast(torch.device(self.device).type, dtype=torch.bfloat16):
            out = model(x)
        return (out.float() - target).pow(2).sum() / (2 * x.shape[0])

    def average(self) -> None:
        """After backward: make every gradient the mean over ranks (nothing: DDP did it)."""

    def run(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        rank = dist.get_rank()
        x, target = batch[0][rank], batch[1][rank]
        self.optimizer.zero_grad(set_to_none=False)
        self.loss(self.trained, x, target).backward()
        self.average()
        self.optimizer.step()
        return self.observed()

    def observed(self, model: nn.Module | None = None) -> tuple[torch.Tensor, ...]:
        """The first and last block's weight gradients, each divided by its RMS, and the
        log2 of the two RMS values. Gradients of a few hundred bf16 products differ between
        summation orders by ~2% of their RMS (measured on the CPU sizes), so they are compared
        in RMS units. The RMS values catch a scale error (a sum over ranks instead of a mean),
        as log2 so that the tolerance sees it at any size: the RMS itself is ~0.02 at the GPU
        sizes, where doubling it stays inside an absolute tolerance, while its log2 moves by
        log2(world) ≥ 1."""
        model = model or self.model
        grads = [model.blocks[0][1].weight.grad, model.blocks[-1][3].weight.grad]
        rms = [g.pow(2).mean().sqrt() for g in grads]
        return grads[0] / rms[0], grads[1] / rms[1], torch.stack(rms).log2()

    def reference(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """One device, the whole global batch, the same start weights, fp32 without
        autocast: the gradient every data-parallel side must reproduce (the mean of per-rank
        means over equal shards is the mean over the whole batch)."""
        model = self.fresh_model()
        x, target = batch
        out = model(x.flatten(0, 1))
        ((out - target.flatten(0, 1)).pow(2).sum() / (2 * x.shape[0] * x.shape[1])).backward()
        return self.observed(model)

    def workload(self) -> Workload:
        return Workload(units=self.cfg.tokens * dist.get_world_size(), unit_name="tokens")  # every rank's
