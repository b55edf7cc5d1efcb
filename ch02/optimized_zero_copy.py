"""Optimized: zero-copy. The kernel reads the pinned host buffer itself, over PCIe.

Pinned host memory is mapped into the GPU's address space (`cudaHostGetDevicePointer`; with
unified addressing the device pointer is the host pointer), so the kernel's loads go
straight to host memory: one operation instead of a copy and a kernel, no device copy, and
each 16-byte load crosses PCIe once. That pays for a small buffer read once, where the
copy's fixed cost is most of the step. It loses for large buffers and for data read more
than once (every read crosses PCIe again, at a small fraction of HBM's bandwidth); the
README's sweep shows where the crossover lies.
"""
import torch

from ch02._zero_copy_common import SCALE, SHIFT, ZeroCopyBench


class ZeroCopyKernel(ZeroCopyBench):
    def run(self, params: torch.Tensor) -> torch.Tensor:
        self.lib.launch_affine_mapped(params, self.out, self.floats, SCALE, SHIFT)
        return self.out


get_benchmark = ZeroCopyKernel

if __name__ == "__main__":
    from core.single import main
    main(ZeroCopyKernel)
