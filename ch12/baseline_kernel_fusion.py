"""Baseline (teaching): eager ops, with the scale read back to the host by `.item()`.

Five elementwise/reduction kernels (mul, add, GELU, abs, amax), each a full pass over 32 MiB,
then `.item()`: the host waits until the GPU has finished everything queued, copies one
number back, and only then launches the division. The GPU idles for that round trip, and no
later work could have been queued behind it. Reading a scalar to the host in the middle of
GPU work is the book's example of what not to do; a competent engineer keeps the scale as a
tensor (optimized_kernel_fusion_device_scale.py), hence `teaching`.
"""
import torch
import torch.nn.functional as F

from ch12._kernel_fusion_common import FusionBench


class ItemBetweenOps(FusionBench):
    teaching = True

    def run(self, x: torch.Tensor) -> torch.Tensor:
        y = F.gelu(x * self.chain.w + self.chain.b)
        scale = y.abs().amax().item()  # the host waits for the GPU here
        return y / scale


get_benchmark = ItemBetweenOps

if __name__ == "__main__":
    from core.single import main
    main(ItemBetweenOps)
