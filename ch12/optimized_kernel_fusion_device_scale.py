"""One step only: the same eager ops with the scale kept on the GPU (no `.item()`).

The division reads the absmax from device memory, so the host queues all six kernels without
waiting. Every memory pass remains; beside the fused variant, this shows what removing the
host sync alone is worth.
"""
import torch

from ch12._kernel_fusion_common import FusionBench


class DeviceScale(FusionBench):
    negative_result = ("on an H100 it matched the .item() baseline (0.98x): each eager op "
                       "takes ~20-30 µs here, so the host is rarely what the GPU waits for; the "
                       "gain is fusion's fewer memory passes")
    def run(self, x: torch.Tensor) -> torch.Tensor:
        return self.chain(x)


get_benchmark = DeviceScale

if __name__ == "__main__":
    from core.single import main
    main(DeviceScale)
