"""Baseline: the decode step launched eagerly, dozens of small kernels one after another.

Each kernel does a few µs of work, and PyTorch's host-side cost per op (dispatch, argument
checks, the launch itself) is about as long, so the GPU idles between kernels waiting for
the next launch. This is what `model(x)` does in any eager inference loop.
"""
import torch

from ch12._cuda_graphs_common import DecodeBench


class EagerDecode(DecodeBench):
    # The step's time is the host's: on the H100 VM it took 1.66 ms in one run and 2.42 ms in
    # the next (the same launches), so the speedup moves with the host's CPU.
    cpu_bound = "the eager step's launches from Python, dozens of kernels of a few µs each, set its time"
    @torch.no_grad()
    def run(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)


get_benchmark = EagerDecode

if __name__ == "__main__":
    from core.single import main
    main(EagerDecode)
