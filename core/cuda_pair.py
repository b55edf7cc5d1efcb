"""Base class for pairs that drive a kernel from a .cu file in their chapter folder."""
from __future__ import annotations

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
