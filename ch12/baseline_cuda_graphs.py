"""Baseline: the decode step launched eagerly, ~100 small kernels one after another.

Each kernel does a few µs of work, and PyTorch's host-side cost per op (dispatch, argument
checks, the launch itself) is about as long, so the GPU idles between kernels waiting for
the next launch. This is what `model(x)` does in any eager inference loop.
"""
import torch

from ch12._cuda_graphs_common import DecodeBench


class EagerDecode(DecodeBench):
    @torch.no_grad()
    def run(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)


get_benchmark = EagerDecode

if __name__ == "__main__":
    EagerDecode.main()
