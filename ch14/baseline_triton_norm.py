"""Baseline: RMSNorm as the model's eager PyTorch code computes it.

Eight kernels, each a full pass over the 32768 x 4096 tensor (or its fp32 copy): the upcast,
pow, mean, add, rsqrt (on the row statistics, small), mul, the cast back, and the weight mul.
The fp32 intermediates are twice the size of x, so the baseline moves several GiB per call
where the formula needs 0.5 GiB.
"""
from __future__ import annotations

import torch

from ch14._triton_norm_common import NormBench, rms_norm


class EagerRMSNorm(NormBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.w)


get_benchmark = EagerRMSNorm

if __name__ == "__main__":
    from core.single import main
    main(EagerRMSNorm)
