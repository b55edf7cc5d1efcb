"""Baseline (Grace superchips only): copy the 256 MiB host buffer to the GPU, then run the kernel on the copy.

What one writes first, and on PCIe the right choice at this size: `cudaMemcpyAsync` host →
device from pinned memory (the copy engine DMAs it over NVLink-C2C here), then zero_copy.cu's
kernel reads the device copy from HBM. On an x86 host or a PCIe GPU the pair SKIPs with the
reason; there `zero_copy` (the same kernels at 256 KiB, and its sweep) and `memory_transfer`
show the PCIe link.
"""
from ch02._grace_coherent_memory_common import GraceCoherentBench
from ch02.baseline_zero_copy import CopyThenKernel


class CopyThenKernelOverC2C(GraceCoherentBench, CopyThenKernel):
    """zero_copy's baseline (copy, then the kernel on the copy) at the Grace size."""


get_benchmark = CopyThenKernelOverC2C

if __name__ == "__main__":
    from core.single import main
    main(CopyThenKernelOverC2C)
