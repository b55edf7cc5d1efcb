"""Baseline: copy the step's buffer into device memory, then run the kernel on the copy.

What anyone writes first: `cudaMemcpyAsync` host → device (from pinned memory, so the copy
engine DMAs it without a CPU staging copy), then the kernel reads the device copy from HBM.
Two operations on the stream, each with its own fixed cost: the copy engine's setup and the
DMA's latency, then the kernel's launch, which waits for the copy to finish.
"""
import torch

from ch02._zero_copy_common import SCALE, SHIFT, ZeroCopyBench
from core.benchmark import BenchContext


class CopyThenKernel(ZeroCopyBench):
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.staging = torch.empty(self.floats, device=ctx.device)  # the device copy

    def run(self, params: torch.Tensor) -> torch.Tensor:
        self.lib.launch_copy_then_affine(params, self.staging, self.out, self.floats, SCALE, SHIFT)
        return self.out


get_benchmark = CopyThenKernel

if __name__ == "__main__":
    from core.single import main
    main(CopyThenKernel)
