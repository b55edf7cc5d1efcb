"""Optimized (Grace superchips only): the kernel reads the host buffer itself, over NVLink-C2C.

The same kernel on the pinned buffer's device address: every SM's 16-byte loads go to the
Grace CPU's memory over the coherent C2C link, and nothing is written to HBM but the result.
On PCIe this loses at 256 MiB (ch02 `zero_copy`'s sweep: 0.96x on the H100 host). Over C2C,
~8x PCIe's bandwidth, the link should still set the time for both sides, so we expect a modest
win: the baseline's HBM write and re-read and its copy-then-kernel serialization, gone. Not
measured yet: the project's machines are x86 hosts with PCIe GPUs, where the pair SKIPs.
"""
from ch02._grace_coherent_memory_common import GraceCoherentBench
from ch02.optimized_zero_copy import ZeroCopyKernel


class KernelReadsHostOverC2C(GraceCoherentBench, ZeroCopyKernel):
    """zero_copy's optimized side (the kernel on the mapped host buffer) at the Grace size."""


get_benchmark = KernelReadsHostOverC2C

if __name__ == "__main__":
    from core.single import main
    main(KernelReadsHostOverC2C)
