"""Shared by `dataloader`: feed compressed images from files on disk to a model on the GPU.

setup() writes the dataset: 1024 images of 320×320×3 uint8, each in its own file, encoded as
a PNG-style codec would (each row's bytes minus their left neighbour's, then zlib), about
180 KB per file. A sample's decode is what a real input pipeline pays per image, in kind:
read the file, inflate it, undo the filter, take a 224×224 crop at a given position, flip it
or not, convert uint8 → float32 and normalize with the ImageNet mean and deviation.

make_inputs(seed) is this call's plan: which 128 samples (distinct, in which order), where
each one is cropped and whether it is flipped; a Sampler hands the plan to the DataLoader
in 8 batches of 16. run() pushes every batch to the GPU and through the model, a small
CNN's forward pass (a 7×7 stem and three strided 3×3 stages, about 0.6 GFLOP per image),
and returns each sample's logits and loss. The sides differ only in how the DataLoader is
built and how the batches are copied.

The files were just written, so they are in the page cache: the pair measures decoding and
feeding the GPU, not the drive (see README.md).

Size: 8 batches of 16 per call, one batch per worker, so the optimized side stays bounded by
the workers' parallel decode; batches of 16 rather than 32 halve every call the harness makes.
Why ~35 s on an H100, not 20: host decoding varies ±16% call to call on the lent VMs, so it
takes ~16 rounds of three sides, each round checked by rerunning the baseline, plus 2 s of
GPU-busy sampling per side.
"""
from __future__ import annotations

import os
import shutil
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset, Sampler

from ch05 import _files
from core.benchmark import BenchContext, Benchmark, Workload

MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)  # ImageNet statistics, in uint8 units
STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)


@dataclass(frozen=True)
class Config:
    samples: int  # image files in the dataset
    size: int  # stored images are size × size × 3
    crop: int  # what the model sees: crop × crop
    batch: int
    steps: int  # batches per run()
    classes: int
    widths: tuple[int, int, int, int]  # the model's channels, stem then each stage

    @property
    def per_run(self) -> int:
        return self.batch * self.steps


CUDA_CONFIG = Config(samples=1024, size=320, crop=224, batch=16, steps=8, classes=1000,
                     widths=(64, 128, 256, 512))
CPU_CONFIG = Config(samples=64, size=40, crop=32, batch=4, steps=4, classes=10,
                    widths=(8, 16, 32, 64))  # CI: a smoke test of the same pipeline
# `bench run --mode smoke` on a GPU: the same images and model, fewer of them per call
SMOKE_CONFIG = Config(samples=256, size=320, crop=224, batch=16, steps=2, classes=1000,
                      widths=(64, 128, 256, 512))


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def require_shared_memory(nbytes: int) -> None:
    """DataLoader workers hand their batches to the training process through /dev/shm; a
    container's default 64 MB there ends in a worker's bus error, so say it up front."""
    try:
        free = shutil.disk_usage("/dev/shm").free
    except OSError:
        return  # no /dev/shm: not Linux, where torch shares memory by other means
    if free < nbytes:
        raise RuntimeError(f"DataLoader workers need up to {nbytes / 2**20:.0f} MiB in /dev/shm "
                           f"for one call's batches; {free / 2**20:.0f} MiB is free (in a "
                           f"container, raise it with `--shm-size`)")


# --- the files -----------------------------------------------------------------------------
def encode(image: np.ndarray) -> bytes:
    """PNG's 'Sub' filter (each byte minus the same channel of the pixel to its left), then
    deflate: smooth images become small residuals that compress."""
    residual = image.copy()
    residual[:, 1:] -= image[:, :-1]  # uint8 arithmetic wraps, as PNG's does
    return zlib.compress(residual.tobytes(), 1)


def decode(blob: bytes, size: int) -> np.ndarray:
    """Inflate and undo the filter: a running sum along each row (uint8, wrapping)."""
    residual = np.frombuffer(zlib.decompress(blob), dtype=np.uint8).reshape(size, size, 3)
    return np.cumsum(residual, axis=1, dtype=np.uint8)


def write_dataset(root: Path, cfg: Config, seed: int) -> None:
    """`cfg.samples` image files plus labels.npy. Each image is a window of one large smooth
    texture (bilinear noise) plus its own sensor noise, so every file differs and
    compresses like a photograph does under PNG (to ~60% of its raw size)."""
    rng = np.random.default_rng(seed)
    cell = 32
    knots = rng.uniform(0, 255, (cfg.size // cell + 9, cfg.size // cell + 9, 3)).astype(np.float32)
    t = (np.arange(cell, dtype=np.float32) / cell)[None, :, None, None]
    rows = (knots[:-1, None] * (1 - t) + knots[1:, None] * t).reshape(-1, knots.shape[1], 3)
    t = t.reshape(1, 1, cell, 1)
    texture = (rows[:, :-1, None] * (1 - t) + rows[:, 1:, None] * t).reshape(rows.shape[0], -1, 3)
    span = texture.shape[0] - cfg.size
    corners = rng.integers(0, span, size=(cfg.samples, 2))
    noise_seeds = rng.integers(0, 2**63, size=cfg.samples)

    def write(index: int) -> None:
        y, x = corners[index]
        noise = np.random.default_rng(noise_seeds[index]).normal(0, 2, (cfg.size, cfg.size, 3))
        image = np.clip(texture[y:y + cfg.size, x:x + cfg.size] + noise, 0, 255).astype(np.uint8)
        (root / f"{index:05d}.img").write_bytes(encode(image))

    with ThreadPoolExecutor(usable_cpus()) as pool:  # zlib and NumPy release the GIL
        list(pool.map(write, range(cfg.samples)))
    np.save(root / "labels.npy", rng.integers(0, cfg.classes, size=cfg.samples))


def normalize(images: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """uint8 [..., 3, H, W] → float32, (x - mean) / std per channel; the same operations in
    the same order on a CPU or a GPU, so both give the same bits."""
    return (images.to(torch.float32) - mean) / std


class ImageFiles(Dataset):
    """Item (index, top, left, flip) → (image, label). `normalize_on_host=False` returns the
    uint8 crop and leaves the conversion to the GPU."""

    def __init__(self, root: Path, cfg: Config, normalize_on_host: bool = True):
        self.root, self.cfg, self.normalize_on_host = root, cfg, normalize_on_host
        self.labels = np.load(root / "labels.npy")
        self.mean = torch.tensor(MEAN).view(3, 1, 1)
        self.std = torch.tensor(STD).view(3, 1, 1)

    def __len__(self) -> int:
        return self.cfg.samples

    def __getitem__(self, item: tuple[int, int, int, int]) -> tuple[torch.Tensor, int]:
        index, top, left, flip = item
        crop = self.cfg.crop
        image = decode((self.root / f"{index:05d}.img").read_bytes(), self.cfg.size)
        image = image[top:top + crop, left:left + crop]
        if flip:
            image = image[:, ::-1]
        chw = torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1)))
        if self.normalize_on_host:
            chw = normalize(chw, self.mean, self.std)
        return chw, int(self.labels[index])


class PlanSampler(Sampler):
    """Batches of this call's plan: `plan` is set by run() before each pass over the loader."""

    def __init__(self, batch: int):
        self.batch, self.plan = batch, []

    def __iter__(self):
        plan = self.plan
        return iter([plan[i:i + self.batch] for i in range(0, len(plan), self.batch)])

    def __len__(self) -> int:
        return len(self.plan) // self.batch


def make_model(cfg: Config) -> nn.Module:
    """A 7×7 stride-2 stem with max pooling, three stride-2 3×3 stages, pooling, a classifier."""
    stem, *stages = cfg.widths
    layers: list[nn.Module] = [nn.Conv2d(3, stem, 7, stride=2, padding=3), nn.ReLU(),
                               nn.MaxPool2d(3, stride=2, padding=1)]
    for width_in, width_out in zip(cfg.widths, stages):
        layers += [nn.Conv2d(width_in, width_out, 3, stride=2, padding=1), nn.ReLU()]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(cfg.widths[-1], cfg.classes))


# --- the pair ------------------------------------------------------------------------------
class LoaderPipeline(Benchmark):
    """Subclasses build the DataLoader (make_loader) and say how batches cross to the GPU."""

    supports_cpu = True
    cpu_bound = "decoding images on the host sets the pace; the GPU is mostly idle"
    report_gpu_busy = True  # the share of the time the GPU runs kernels (core.busy)
    # a host-bound call of ~0.5 s (half the 1 s call for which 4 s gave ~10 samples and a ±8%
    # interval on an H100, and 15 s gave 16): 8 s gives the baseline ~16 samples again
    time_cap_s = 8.0
    normalize_on_host = True  # False: the loader yields uint8 and the GPU normalizes
    non_blocking = False  # copies that return before they finish (from pinned memory)

    @property
    def cfg(self) -> Config:
        if not self.ctx.is_cuda:
            return CPU_CONFIG
        return SMOKE_CONFIG if self.ctx.smoke else CUDA_CONFIG

    @property
    def batch_bytes(self) -> int:
        """Bytes of one batch of images as the loader yields it."""
        return self.cfg.batch * 3 * self.cfg.crop**2 * (4 if self.normalize_on_host else 1)

    def make_loader(self, dataset: Dataset, sampler: PlanSampler) -> DataLoader:
        raise NotImplementedError

    def setup(self, ctx: BenchContext) -> None:
        cfg = self.cfg
        self.fixture = f"dataloader_{cfg.samples}x{cfg.size}_seed{ctx.seed}"
        root = _files.acquire(self.fixture, lambda path: write_dataset(path, cfg, ctx.seed))
        torch.manual_seed(ctx.seed)  # the same weights on every side
        self.model = make_model(cfg).to(ctx.device).eval()
        self.mean = torch.tensor(MEAN, device=ctx.device).view(3, 1, 1)
        self.std = torch.tensor(STD, device=ctx.device).view(3, 1, 1)
        self.sampler = PlanSampler(cfg.batch)
        self.loader = self.make_loader(ImageFiles(root, cfg, self.normalize_on_host), self.sampler)
        for _ in self.loader:  # an empty plan: starts persistent workers, if any, here
            pass

    def make_inputs(self, seed: int) -> torch.Tensor:
        """The plan, [samples per run, 4] int64 on the host: (file index, top, left, flip)."""
        cfg = self.cfg
        gen = torch.Generator().manual_seed(seed)
        n = cfg.per_run
        index = torch.randperm(cfg.samples, generator=gen)[:n]
        corner = torch.randint(0, cfg.size - cfg.crop + 1, (n, 2), generator=gen)
        flip = torch.randint(0, 2, (n,), generator=gen)
        return torch.stack([index, corner[:, 0], corner[:, 1], flip], dim=1)

    def run(self, plan: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.sampler.plan = [tuple(row) for row in plan.tolist()]
        logits, losses = [], []
        for images, labels in self.loader:
            images = images.to(self.device, non_blocking=self.non_blocking)
            labels = labels.to(self.device, non_blocking=self.non_blocking)
            batch_logits, batch_losses = self.step(images, labels)
            logits.append(batch_logits)
            losses.append(batch_losses)
        return torch.cat(logits), torch.cat(losses)

    @torch.no_grad()
    def step(self, images: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The GPU's work on one batch: the forward pass and each sample's loss."""
        if images.dtype == torch.uint8:
            images = normalize(images, self.mean, self.std)
        logits = self.model(images)
        return logits, F.cross_entropy(logits, labels, reduction="none")

    def teardown(self) -> None:
        iterator = getattr(getattr(self, "loader", None), "_iterator", None)
        if iterator is not None:  # persistent workers: stop the processes now, not at exit
            iterator._shutdown_workers()
        self.loader = None
        if hasattr(self, "fixture"):
            _files.release(self.fixture)

    def workload(self) -> Workload:
        return Workload(units=self.cfg.per_run, unit_name="samples")
