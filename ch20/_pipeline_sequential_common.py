"""Shared by `pipeline_sequential` and `pipeline_sequential_bandwidth`: an image-classification
inference pipeline, four stages per batch.

1. H2D: a batch of uint8 frames [B, 3, H, W] crosses from host memory to the GPU;
2. preprocess: uint8 -> float, normalized with the ImageNet mean and deviation, cast to the
   model's dtype (bf16 on the GPU);
3. model: a ViT-style classifier (16x16 patches by a strided conv, pre-norm encoder blocks
   with SDPA attention and a GELU MLP, mean pooling, a linear head);
4. postprocess + D2H: softmax over the classes, the top 5 (probabilities and class ids),
   copied back to host memory, where the caller reads them.

make_inputs(seed) is one call's frames: BATCHES batches, in host memory. On the GPU they
sit in pinned (page-locked) memory, as frames do that a decoder or a NIC wrote into a pinned
pool; whether to pin is ch05's `dataloader` question, not this pair's. Both sides read the
same buffers and return the same [BATCHES * B, 5] probabilities and ids: the sides differ
only in how the stages of consecutive batches are ordered in time.

Two regimes, two stems (each its own inputs):
- `pipeline_sequential`: 64 frames of 224x224 per batch and a 6-block ViT (d 768, ~44M
  parameters): ~1.1 TFLOP per batch against 9.6 MB of copy. Compute sets the pace; overlap
  is expected to hide the copies and the host's sync gaps behind it.
- `pipeline_sequential_bandwidth`: 32 frames of 512x512 (25 MB per batch) and a one-block
  model with 32x32 patches: the copy sets the pace; overlap is expected to hide the compute
  behind it, and the pipeline's rate to approach the host-to-device link's.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from core.benchmark import BenchContext, Benchmark, Workload

MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)  # ImageNet statistics, in uint8 units
STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)
TOP_K = 5


@dataclass(frozen=True)
class Config:
    batches: int  # per run()
    batch: int  # frames per batch
    size: int  # frames are size x size x 3 uint8
    patch: int
    d_model: int
    heads: int
    layers: int
    classes: int

    @property
    def tokens(self) -> int:
        return (self.size // self.patch) ** 2

    @property
    def frame_bytes(self) -> int:
        return 3 * self.size * self.size

    def flops_per_frame(self) -> float:
        d, t = self.d_model, self.tokens
        block = 2 * t * 12 * d * d + 4 * t * t * d  # QKV/proj/MLP matmuls + attention
        return 2 * t * d * 3 * self.patch ** 2 + self.layers * block + 2 * d * self.classes


COMPUTE_BOUND = Config(batches=8, batch=64, size=224, patch=16, d_model=768, heads=12, layers=6,
                       classes=1000)
TRANSFER_BOUND = Config(batches=8, batch=32, size=512, patch=32, d_model=256, heads=4, layers=1,
                        classes=1000)
CPU_CONFIG = Config(batches=3, batch=2, size=32, patch=8, d_model=32, heads=2, layers=1, classes=10)


class EncoderBlock(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.norm2(x))))


class Classifier(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.patchify = nn.Conv2d(3, cfg.d_model, cfg.patch, stride=cfg.patch)
        self.pos = nn.Parameter(0.02 * torch.randn(cfg.tokens, cfg.d_model))
        self.blocks = nn.ModuleList(EncoderBlock(cfg.d_model, cfg.heads) for _ in range(cfg.layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patchify(images).flatten(2).transpose(1, 2) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(dim=1))


class InferencePipeline(Benchmark):
    """The stages as methods; the sides order them in time."""

    supports_cpu = True
    cuda_config = COMPUTE_BOUND

    @property
    def cfg(self) -> Config:
        return self.cuda_config if self.ctx.is_cuda else CPU_CONFIG

    def setup(self, ctx: BenchContext) -> None:
        torch.manual_seed(ctx.seed)  # built on the CPU: the same weights on every side
        self.dtype = torch.bfloat16 if ctx.is_cuda else torch.float32
        self.model = Classifier(self.cfg).to(ctx.device, self.dtype).eval()
        self.mean = torch.tensor(MEAN, device=ctx.device).view(1, 3, 1, 1)
        self.std = torch.tensor(STD, device=ctx.device).view(1, 3, 1, 1)
        self.prepare()

    def prepare(self) -> None:
        """Per-side setup: streams, events, device buffers (not timed)."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        """Frames [batches, batch, 3, size, size] uint8 in host memory (pinned on a GPU run)."""
        c = self.cfg
        # Drawn on the device, then copied to the host: torch.randint on the CPU took 1.6 s per
        # call at the GPU size (H100 host), and the harness draws fresh frames every round.
        frames = torch.randint(0, 256, (c.batches, c.batch, 3, c.size, c.size), dtype=torch.uint8,
                               generator=self.generator(seed), device=self.device)
        if not self.ctx.is_cuda:
            return frames
        return torch.empty(frames.shape, dtype=frames.dtype, pin_memory=True).copy_(frames)

    @torch.no_grad()
    def infer(self, frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Preprocess, model, postprocess of one batch already on the device: (probs, ids) [B, 5]."""
        images = ((frames.float() - self.mean) / self.std).to(self.dtype)
        probs = self.model(images).float().softmax(dim=-1)
        return probs.topk(TOP_K, dim=-1)

    def workload(self) -> Workload:
        c = self.cfg
        frames = c.batches * c.batch
        return Workload(flops=frames * c.flops_per_frame(), flops_dtype="bf16", units=frames,
                        unit_name="frames", link_bytes=frames * c.frame_bytes, link="h2d")
