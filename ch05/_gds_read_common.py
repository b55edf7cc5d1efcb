"""Shared by `gds_read`: read chunks of a file on the local drive into GPU memory.

setup() writes a 1 GiB file of random bytes (256 chunks of 4 MiB) and allocates the
destination, a [64, 4 MiB] uint8 tensor on the GPU. make_inputs(seed) is this call's list of
64 distinct chunk indices (256 MiB), in the order they land in the destination; run()
returns the destination, which must hold exactly those bytes (`reference()` reads them with
plain file reads).

Cold reads on both sides: every call starts by asking the kernel to drop the file from the
page cache (`posix_fadvise(DONTNEED)`), so the bytes come from the drive, as they do for a
dataset or checkpoint larger than host memory. (GPUDirect Storage reads with O_DIRECT and
never fills the page cache; without the eviction, the baseline would read memory after the
first call.) Both sides issue their reads from IO_THREADS threads, so the pair compares data
paths, not I/O parallelism. Point AISP_CH05_DATA_DIR at the NVMe drive under test; on
tmpfs or a network file system GDS cannot read directly.

Needs kvikio (`pip install kvikio-cu12` or `-cu13`, matching the CUDA runtime): without it
the pair is SKIPPED with the reason. Which path kvikio took is printed in the pair's log
(`logs/ch05__gds_read.log`): compatibility mode (POSIX reads through host bounce buffers,
which is not GDS) or cuFile.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ch05 import _files
from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

IO_THREADS = 8  # concurrent reads in flight on either side


@dataclass(frozen=True)
class Config:
    chunk: int  # bytes per read
    file_chunks: int
    read_chunks: int  # per run()

    @property
    def read_bytes(self) -> int:
        return self.chunk * self.read_chunks


CUDA_CONFIG = Config(chunk=4 << 20, file_chunks=256, read_chunks=64)
CPU_CONFIG = Config(chunk=64 << 10, file_chunks=32, read_chunks=8)  # the tests' CPU check


def write_file(path: Path, cfg: Config, seed: int) -> None:
    """Random bytes, flushed to the drive (so eviction can drop every page)."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        for _ in range(cfg.file_chunks):
            f.write(rng.bytes(cfg.chunk))
        f.flush()
        os.fsync(f.fileno())


class FileToGpu(Benchmark):
    requires = Requirements(modules=("kvikio",))
    tolerance = Tolerance(0.0, 0.0)  # bytes: exactly

    @property
    def cfg(self) -> Config:
        return CUDA_CONFIG if self.ctx.is_cuda else CPU_CONFIG

    def setup(self, ctx: BenchContext) -> None:
        cfg = self.cfg
        self.fixture = f"gds_{cfg.file_chunks}x{cfg.chunk}_seed{ctx.seed}"
        root = _files.acquire(self.fixture, lambda d: write_file(d / "data.bin", cfg, ctx.seed))
        self.path = root / "data.bin"
        self.fd = os.open(self.path, os.O_RDONLY)
        self.out = torch.empty((cfg.read_chunks, cfg.chunk), dtype=torch.uint8, device=ctx.device)

    def make_inputs(self, seed: int) -> torch.Tensor:
        """Which chunks to read, in order: [read_chunks] int64 on the host."""
        gen = torch.Generator().manual_seed(seed)
        return torch.randperm(self.cfg.file_chunks, generator=gen)[:self.cfg.read_chunks]

    def evict(self) -> None:
        _files.evict_from_page_cache(self.fd)

    def reference(self, chunks: torch.Tensor) -> torch.Tensor:
        with open(self.path, "rb") as f:
            data = []
            for chunk in chunks.tolist():
                f.seek(chunk * self.cfg.chunk)
                data.append(f.read(self.cfg.chunk))
        host = np.frombuffer(b"".join(data), dtype=np.uint8).reshape(len(data), -1)
        return torch.from_numpy(host.copy()).to(self.device)

    def teardown(self) -> None:
        _files.close(self)

    def workload(self) -> Workload:
        return Workload(link_bytes=self.cfg.read_bytes, link="h2d")
