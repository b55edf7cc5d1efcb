"""Baseline (Grace superchips only): copy the 256 MiB host buffer to the GPU, then run the kernel on the copy.

What one writes first, and on PCIe the right choice at this size: `cudaMemcpyAsync` host →
device from pinned memory (the copy engine DMAs it over NVLink-C2C here), then zero_copy.cu's
kernel reads the device copy from HBM. On an x86 host or a PCIe GPU the pair SKIPs with the
reason; there `zero_copy` (the same kernels at 256 KiB, and its sweep) and `memory_transfer`
show the PCIe link.
"""
import torch

from ch02._grace_coherent_memory_common import GraceCoherentBench
from ch02._zero_copy_common import SCALE, SHIFT
from core.benchmark import BenchContext


class CopyThenKernelOverC2C(GraceCoherentBench):
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.staging = torch.empty(self.floats, device=ctx.device)  # the device copy

    def run(self, params: torch.Tensor) -> torch.Tensor:
        self.lib.launch_copy_then_affine(params, self.staging, self.out, self.floats, SCALE, SHIFT)
        return self.out


get_benchmark = CopyThenKernelOverC2C

if __name__ == "__main__":
    from core.single import main
    main(CopyThenKernelOverC2C)
