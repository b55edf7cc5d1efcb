"""Shared by `nvshmem_pipeline`: a pipeline-parallel forward pass at decode sizes.

Each rank is one pipeline stage of a chain rank 0 → rank 1 → ... → rank n-1 and holds one
pre-norm residual MLP block (d 4096, hidden 8192, bf16: 128 MiB of weights per GPU). A call
pushes 16 micro-batches of 8 tokens (decode steps of 8 sequences each) through the chain:
stage s takes micro-batch i from stage s-1, applies its block and hands the result to stage
s+1. The hand-off is 64 KiB per micro-batch and link, and each stage's work per micro-batch
is a few tens of µs (its weights read once from HBM): the regime where a transfer's fixed
latency, not its bytes, sits on the critical path, once per micro-batch in every stage's loop
and n-1 more times in the pipeline's fill. That is where device-initiated transfers pay; a
stage with whole transformer layers (ms of work per micro-batch) would hide either transport.

The sides differ only in the hand-off. Both are timed by CUDA-graph replay (`timing_mode =
"graph"`), as decode steps are served, so neither pays the host's launches: the baseline pays
NCCL's point-to-point kernels on NCCL's own stream (a recv and a send per micro-batch and
link, each joined to the compute stream by events), the optimized side a copy into the next
GPU's memory and two one-thread flag kernels on the compute stream.

The pair runs on every GPU present (`bench run --gpus N` for fewer) and scales weakly, the way
pipelines grow: one block per GPU and the same 16 micro-batches at every count, so each GPU's
work per call is fixed and the chain gets deeper; the fill and drain, n-1 micro-batch periods
and n-1 hand-offs on the critical path, grow with n.

make_inputs builds the call's 16 micro-batches on every rank (stage 0 reads them). Every rank
returns the activations its stage produced, [16, 8, 4096]: the last rank's are the pipeline's
output, the others' check each stage and hand-off on the way. reference() applies blocks
0..rank to the inputs in float64 on one device.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload


@dataclass(frozen=True)
class Config:
    d_model: int
    hidden: int
    tokens: int  # per micro-batch
    microbatches: int


CUDA_CONFIG = Config(d_model=4096, hidden=8192, tokens=8, microbatches=16)
# The gloo tests' sizes: the same code paths, tiny blocks.
CPU_CONFIG = Config(d_model=64, hidden=128, tokens=4, microbatches=8)
EPS = 1e-6  # rms_norm's epsilon, fixed: its default is the dtype's own (2^-7 for bf16)


def stage_weights(cfg: Config, seed: int, stage: int,
                  device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Stage `stage`'s W1 [hidden, d] and W2 [d, hidden] in bf16, the same wherever they are
    built (seeded by the stage), scaled so each matmul keeps unit-variance activations."""
    gen = torch.Generator(device=device).manual_seed(seed * 1000 + stage)
    w1 = torch.randn(cfg.hidden, cfg.d_model, generator=gen, device=device) / math.sqrt(cfg.d_model)
    w2 = torch.randn(cfg.d_model, cfg.hidden, generator=gen, device=device) / math.sqrt(cfg.hidden)
    return w1.to(torch.bfloat16), w2.to(torch.bfloat16)


def mlp_block(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor,
              out: torch.Tensor) -> torch.Tensor:
    """out = x + W2 · gelu(W1 · rms_norm(x)): one pre-norm residual MLP block."""
    h = F.gelu(F.linear(F.rms_norm(x, x.shape[-1:], eps=EPS), w1))
    return torch.add(x, F.linear(h, w2), out=out)


class PipelineForward(Benchmark):
    """One forward of the micro-batches through the chain; subclasses move them between stages."""

    supports_cpu = True  # the NCCL side runs on gloo ranks; the symmetric-memory side needs CUDA
    requires = Requirements(gpus=2, scales="weak")
    timing_mode = "graph"
    # Baseline against float64: bf16 rounds every block's normed input, hidden activation and
    # output (half an ulp, 2^-9 relative, each), and the error carried in the residual stream
    # goes through every later block. Simulated on the CPU at these sizes (3 seeds, 8 stages,
    # bf16 matmuls accumulating in fp32 as cuBLAS's do): the worst element was 0.061 beyond 2%
    # of its value (at stage 7, activations' RMS 2.1; 0.012 at stage 0, RMS 1.2) and the
    # relative RMS error 0.65%. atol 0.15 is 2.5x the worst. A stage skipped moves the values
    # by its block's output, RMS 0.65; a stale or swapped micro-batch by 1.6-2.7 RMS.
    # The two sides run the same kernels on the same values (only the transport differs), so
    # they should agree bit for bit: they are held to bf16's default tolerance.
    reference_tolerance = Tolerance(rtol=2e-2, atol=1.5e-1)

    @property
    def cfg(self) -> Config:
        return CUDA_CONFIG if self.ctx.is_cuda else CPU_CONFIG

    def setup(self, ctx: BenchContext) -> None:
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.prev = self.rank - 1 if self.rank > 0 else None  # the stage this one receives from
        self.next = self.rank + 1 if self.rank < self.world - 1 else None  # ... and sends to
        self.w1, self.w2 = stage_weights(self.cfg, ctx.seed, self.rank, ctx.device)

    def shape(self) -> tuple[int, int, int]:
        return self.cfg.microbatches, self.cfg.tokens, self.cfg.d_model

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(*self.shape(), gen=self.generator(seed), dtype=torch.bfloat16)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        """Blocks 0..rank applied to every micro-batch in float64: this rank's stage output."""
        out = x.double()
        for stage in range(dist.get_rank() + 1):
            weights = stage_weights(self.cfg, self.ctx.seed, stage, self.device)
            w1, w2 = (w.double() for w in weights)
            out = out + F.linear(F.gelu(F.linear(F.rms_norm(out, out.shape[-1:], eps=EPS), w1)), w2)
        return out

    def workload(self) -> Workload:
        cfg = self.cfg
        tokens = cfg.microbatches * cfg.tokens
        weights = 2 * cfg.d_model * cfg.hidden  # per GPU: one block
        # each micro-batch reads the stage's weights once (decode: they do not fit in L2)
        return Workload(bytes=cfg.microbatches * weights * 2, flops=2 * weights * tokens,
                        flops_dtype="bf16", units=tokens, unit_name="tokens")
