"""Base class for pairs that drive a kernel from a .cu file in their chapter folder."""
from __future__ import annotations

import inspect
from pathlib import Path

import torch

from core.benchmark import BenchContext, Benchmark, Requirements
from core.cuda import CudaLibrary, load


class CudaPair(Benchmark):
    """Loads `source` (a .cu file next to the subclass's module) and seeds a generator.

    Subclasses set `source` and implement `make_inputs()`, `run()` and `workload()`.
    Output buffers should be pre-filled with NaN so an element a kernel never writes fails
    verification instead of passing on leftover memory.
    """

    source = ""  # e.g. "copy.cu"
    requires = Requirements(nvcc=True)

    def setup(self, ctx: BenchContext) -> None:
        here = Path(inspect.getfile(type(self))).parent
        self.lib: CudaLibrary = load(here / self.source)  # built once, cached under build/
        self.gen = torch.Generator(device=ctx.device).manual_seed(ctx.seed)
        self.device = ctx.device
        self.make_inputs()

    def make_inputs(self) -> None:
        raise NotImplementedError

    def randn(self, *shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=self.gen, device=self.device)

    def nan_like(self, tensor: torch.Tensor) -> torch.Tensor:
        return torch.full_like(tensor, float("nan"))

    def sm_count(self) -> int:
        return torch.cuda.get_device_properties(self.device).multi_processor_count
