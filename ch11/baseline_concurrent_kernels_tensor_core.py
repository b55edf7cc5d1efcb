"""Baseline: the memory-bound EMA pass, then the GEMMs, on one stream.

One stream runs them in order: while the pass streams 3 GiB through HBM the tensor cores
idle, and while the GEMMs run the memory system is far from busy.
"""
import torch

from ch11._concurrent_kernels_tensor_core_common import TensorCoreOverlapBench


class Serialized(TensorCoreOverlapBench):
    def run(self, x: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        ema = self.ema_update(x["ema"], x["weights"])
        return self.gemms(x["x"]), ema


get_benchmark = Serialized

if __name__ == "__main__":
    from core.single import main
    main(Serialized)
