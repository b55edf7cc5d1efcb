"""Shared pieces of the ch07 pairs: the CUDA-pair base class and deterministic inputs."""
from __future__ import annotations

from pathlib import Path

import torch

from core.benchmark import BenchContext, Benchmark, Requirements
from core.cuda import CudaLibrary, load

HERE = Path(__file__).parent


class CudaPair(Benchmark):
    """A benchmark driving one launcher of a .cu file in this folder."""

    source = ""  # e.g. "copy.cu"
    requires = Requirements(nvcc=True)

    def setup(self, ctx: BenchContext) -> None:
        self.lib: CudaLibrary = load(HERE / self.source)  # built once, cached under build/
        self.gen = torch.Generator(device=ctx.device).manual_seed(ctx.seed)
        self.device = ctx.device
        self.make_inputs()

    def make_inputs(self) -> None:
        raise NotImplementedError

    def randn(self, *shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=self.gen, device=self.device)

    def sm_count(self) -> int:
        return torch.cuda.get_device_properties(self.device).multi_processor_count
