"""Baseline: the five independent kernels one after another on the current stream.

What eager code does by default: every operation goes to the current stream, and a stream
runs its kernels in order, each starting when the one before has finished. A kernel that
fills a third of the GPU leaves the rest idle for its whole duration, and each kernel's
ramp-up and tail are exposed.
"""
import torch

from ch11._concurrent_kernels_common import ConcurrentKernelsBench, Inputs


class OneStream(ConcurrentKernelsBench):
    def run(self, x: Inputs) -> tuple[torch.Tensor, ...]:
        return tuple(kernel() for kernel in self.kernels(x))


get_benchmark = OneStream

if __name__ == "__main__":
    from core.single import main
    main(OneStream)
