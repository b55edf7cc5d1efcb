"""HONEST twin of lru_identity: an lru_cache keyed on the shape (a constant table, like a
compiled kernel or a RoPE table), never on the data."""
import functools

import torch

from ._planted_common import Planted

EXPECT = "pass"


@functools.lru_cache(maxsize=8)
def ones(n: int, device: str) -> torch.Tensor:
    return torch.ones(n, device=device)


class LruOverShape(Planted):
    def run(self, inputs):
        x, y = inputs
        return torch.sin(x) * y + x * ones(x.numel(), str(x.device))


get_benchmark = LruOverShape
