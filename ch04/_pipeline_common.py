"""Shared by `pipeline_parallel`: one training step (forward and backward) of a block stack
split into pipeline stages across the ranks, with `torch.distributed.pipelining`.

Four MLP blocks per GPU (d 2048, hidden 8192: 134M parameters per GPU, bf16 autocast; 8
blocks, 268M parameters on 2 GPUs) train on 8 micro-batches of 4096 tokens. The sides differ
only in the schedule, which decides the order of the micro-batches' forward and backward
passes on each stage and therefore how many micro-batches' activations a GPU holds at once:

- GPipe: every forward, then every backward: a stage keeps all 8 micro-batches' activations.
- 1F1B: after a warm-up of (stages - rank) forwards, one forward then one backward: rank 0
  keeps at most p micro-batches' activations on p GPUs (2 of 8 on 2 GPUs). Same bubble,
  same time.
- Interleaved 1F1B: each rank holds two non-adjacent stages (2p virtual stages on p GPUs),
  which halves the bubble's share at the cost of twice the stage-to-stage transfers.

The pair runs on every GPU present (`bench run --gpus N` for fewer, at most 8: 1F1B needs
as many micro-batches as stages) and scales weakly, the way pipelines grow: the model gets
deeper with the GPU count (4 blocks per GPU) and the batch stays 8 × 4096 tokens, so each
GPU's work is the same at every count. What changes is the schedule's share: the bubble
(p-1)/(m+p-1) grows from 1/9 on 2 GPUs to 7/15 on 8, and 1F1B's saving, m/p micro-batches'
activations on rank 0, shrinks to none at 8 GPUs; interleaving halves the bubble there.

make_inputs(seed) builds the whole batch on every rank; the first stage's rank feeds the
inputs, the last stage's rank the targets. run() zeroes the gradients, runs the schedule
and returns the stack's gradient norm (one all-reduce of a scalar, as gradient clipping
computes it) and, in RMS units, the gradient of a block that every layout places on this
rank: rank 0 the first block's first weight, the last rank the last block's second weight.
The first block's gradient has flowed back through every stage, so it checks the whole
pipeline; a middle rank (4 GPUs and more) holds no block in common between the plain and
the interleaved layouts, so the norm is its check.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import PipelineStage

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload


@dataclass(frozen=True)
class Config:
    d_model: int
    hidden: int
    blocks_per_rank: int  # the stack is blocks_per_rank × world blocks deep
    microbatches: int
    tokens: int  # per micro-batch


# One 4096-token sequence per micro-batch, 8 micro-batches (32k tokens a step). At 16 × 1024
# tokens the step was host-bound: the schedules' Python cost 46 ms of a 53 ms step (README).
# 4 blocks per rank: with 2 stages per rank (interleaved) each stage still holds 2 blocks.
CUDA_CONFIG = Config(d_model=2048, hidden=8192, blocks_per_rank=4, microbatches=8, tokens=4096)
# The gloo tests' sizes; 8 micro-batches as on the GPU, since 1F1B needs one per stage and
# `bench run --gpus 8` runs 8 stages on a CPU as well.
CPU_CONFIG = Config(d_model=32, hidden=64, blocks_per_rank=4, microbatches=8, tokens=8)


def block(cfg: Config, seed: int, index: int, device: str) -> nn.Module:
    """Block `index`, the same weights wherever it is built (seeded by its index)."""
    torch.manual_seed(seed * 1000 + index)
    with torch.device(device):
        return nn.Sequential(nn.LayerNorm(cfg.d_model), nn.Linear(cfg.d_model, cfg.hidden),
                             nn.GELU(), nn.Linear(cfg.hidden, cfg.d_model))


class Stage(nn.Module):
    """A run of residual blocks under bf16 autocast; what a pipeline stage executes."""

    def __init__(self, blocks: list[nn.Module], device_type: str):
        super().__init__()
        self.blocks, self.device_type = nn.ModuleList(blocks), device_type

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(self.device_type, dtype=torch.bfloat16):
            for b in self.blocks:
                x = x + b(x)
        return x


def loss_fn(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Half the squared error summed over features, averaged over the micro-batch's tokens;
    the schedule divides gradients by the micro-batch count, so the step's gradient is the
    mean over the whole batch."""
    return (out.float() - target).pow(2).sum() / (2 * out.shape[0])


class PipelineStep(Benchmark):
    """One forward+backward step; subclasses pick the schedule and stages per rank."""

    supports_cpu = True
    requires = Requirements(gpus=2, scales="weak")
    virtual_stages = 1  # stages per rank
    # In RMS units, as in ch04's data-parallel pairs: schedules accumulate the same bf16
    # micro-batch gradients in other orders (~1% of the RMS); a missing micro-batch or stage
    # is off by far more. The fp32 reference differs from bf16 by up to ~2.5% of the RMS.
    tolerance = Tolerance(rtol=2e-2, atol=5e-2)
    reference_tolerance = Tolerance(rtol=2e-2, atol=6e-2)

    @property
    def cfg(self) -> Config:
        return CUDA_CONFIG if self.ctx.is_cuda else CPU_CONFIG

    def schedule_class(self) -> type:
        raise NotImplementedError

    def blocks(self) -> int:
        """The depth of the stack: blocks_per_rank on every rank."""
        return self.cfg.blocks_per_rank * dist.get_world_size()

    def setup(self, ctx: BenchContext) -> None:
        rank, world = dist.get_rank(), dist.get_world_size()
        stages_total = world * self.virtual_stages
        per_stage = self.cfg.blocks_per_rank // self.virtual_stages
        device = torch.device(ctx.device, torch.cuda.current_device()) if ctx.is_cuda else torch.device("cpu")
        self.modules, stages = [], []
        for stage_index in range(rank, stages_total, world):  # rank r: stages r, r + world, ...
            first = stage_index * per_stage
            module = Stage([block(self.cfg, ctx.seed, i, ctx.device)
                            for i in range(first, first + per_stage)], device.type)
            self.modules.append(module)
            stages.append(PipelineStage(module, stage_index, stages_total, device))
        self.first_rank, self.last_rank = 0, (stages_total - 1) % world
        # the block run() observes, one that every layout places on this rank: the first on
        # rank 0, the last on the last rank; a middle rank shares no block across layouts
        self.watched = {0: 0, world - 1: self.blocks() - 1}.get(rank)
        schedule = self.schedule_class()
        self.schedule = schedule(stages if self.virtual_stages > 1 else stages[0],
                                 n_microbatches=self.cfg.microbatches, loss_fn=loss_fn)

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = self.generator(seed)
        shape = (self.cfg.microbatches * self.cfg.tokens, self.cfg.d_model)
        return self.randn(*shape, gen=gen), self.randn(*shape, gen=gen)

    def run(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        x, target = batch
        for module in self.modules:
            module.zero_grad(set_to_none=False)
        rank = dist.get_rank()
        args = (x,) if rank == self.first_rank else ()
        kwargs = {"target": target} if rank == self.last_rank else {}
        self.schedule.step(*args, **kwargs, return_outputs=False)
        held = [p.grad for module in self.modules for p in module.parameters()]
        norm_sq = torch.nn.utils.get_total_norm(held).pow(2)
        dist.all_reduce(norm_sq)  # the stack's gradient norm, as gradient clipping computes it
        watched = self.modules[0].blocks[0] if rank == 0 else self.modules[-1].blocks[-1]
        return self.observed(watched, norm_sq.sqrt())

    def observed(self, block_: nn.Module, norm: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The whole stack's gradient norm, then on rank 0 the first block's first weight
        gradient and on the last rank the last block's second weight gradient, in RMS units,
        with the RMS (which catches a scale error). A middle rank returns only the norm."""
        if self.watched is None:
            return (norm.reshape(1),)
        grad = (block_[1] if dist.get_rank() == 0 else block_[3]).weight.grad
        rms = grad.pow(2).mean().sqrt()
        return norm.reshape(1), grad / rms, rms

    def reference(self, batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        """The whole stack on one device in fp32, the whole batch: the gradients the pipeline
        must reproduce for this rank's observed block and their norm over the stack.
        Micro-batch by micro-batch, gradients accumulated (the same sum, with one
        micro-batch's activations alive at a time, so the 32-block stack of 8 GPUs fits
        beside the pipeline)."""
        x, target = batch
        blocks = [block(self.cfg, self.ctx.seed, i, self.device) for i in range(self.blocks())]
        scale = 2 * self.cfg.tokens * self.cfg.microbatches
        for xs, ts in zip(x.split(self.cfg.tokens), target.split(self.cfg.tokens)):
            out = xs
            for b in blocks:
                out = out + b(out)
            ((out - ts).pow(2).sum() / scale).backward()
        norm = torch.nn.utils.get_total_norm([p.grad for b in blocks for p in b.parameters()])
        return self.observed(blocks[self.watched or 0], norm)

    def workload(self) -> Workload:
        cfg = self.cfg
        tokens = cfg.microbatches * cfg.tokens
        # forward 2 FLOPs per weight per token, backward 4; each GPU holds blocks_per_rank blocks
        params_per_gpu = cfg.blocks_per_rank * 2 * cfg.d_model * cfg.hidden
        return Workload(flops=6 * params_per_gpu * tokens, flops_dtype="bf16", units=tokens,
                        unit_name="tokens")
