"""Teaching baseline: RMSNorm spelled out as eager ops, as the Llama / Hugging Face module does.

Eight kernels, each a full pass over the 32768 x 4096 tensor (or its fp32 copy): the upcast,
pow, mean, add, rsqrt (on the row statistics, small), mul, the cast back, and the weight mul.
The fp32 intermediates are twice the size of x, so this moves several GiB per call where the
formula needs 0.5 GiB. It is the chapter's lesson in what fusion buys, not what an engineer
would time against: `F.rms_norm` is already one fused kernel (`triton_norm`'s baseline).
"""
from __future__ import annotations

import torch

from ch14._triton_norm_common import EPS, NormBench


def rms_norm_eager(x: torch.Tensor, w: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """The module's forward: normalize in fp32, round to x's dtype, then scale by w."""
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return w * xf.to(x.dtype)


class EagerRMSNorm(NormBench):
    teaching = True  # eight unfused passes: the speedup is the lesson, not a headline

    def run(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm_eager(x, self.w)


get_benchmark = EagerRMSNorm

if __name__ == "__main__":
    from core.single import main
    main(EagerRMSNorm)
