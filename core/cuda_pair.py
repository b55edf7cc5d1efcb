"""Base class for pairs that drive a kernel from a .cu file in their chapter folder."""
from __future__ import annotations

import ctypes
import inspect
from pathlib import Path

from core.benchmark import BenchContext, Benchmark, Requirements
from core.cuda import CudaLibrary, load


class CudaPair(Benchmark):
    """Loads `source` (a .cu file next to the subclass's module) in setup().

    Subclasses set `source`, implement make_inputs(seed), run(inputs) and workload(), and
    call `super().setup(ctx)` if they add to setup(). Output buffers allocated in setup()
    should be NaN-filled (`self.nan_like`), so an element a kernel never writes fails
    verification instead of passing on leftover memory.
    """

    source = ""  # e.g. "copy.cu"
    requires = Requirements(nvcc=True)

    def setup(self, ctx: BenchContext) -> None:
        here = Path(inspect.getfile(type(self))).parent
        self.lib: CudaLibrary = load(here / self.source)  # built once, cached under build/

    def blocks_per_sm(self, query: str, *args: int) -> int:
        """CTAs per SM by CUDA's occupancy calculator, through the .cu file's `query` export
        (`extern "C" int query(int64_t args..., int64_t* blocks, cudaStream_t)`)."""
        blocks = ctypes.c_int64(0)
        getattr(self.lib, query)(*args, ctypes.byref(blocks))
        return blocks.value

    def natural_grid(self, query: str, *args: int) -> int:
        """A persistent grid at the kernel's natural residency: as many CTAs as fit, per SM."""
        return self.blocks_per_sm(query, *args) * self.sm_count()
