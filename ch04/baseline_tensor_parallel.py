"""Replicated: every rank holds the whole MLP and computes it for all tokens.

What runs without tensor parallelism when the weights fit on one GPU (940 MB here): no
communication, one GPU's time for the layer. Tensor parallelism has to beat this to pay.
(The baseline was once ZeRO-3 style, all-gathering 470 MB of weight shards before every
forward and then computing the whole MLP on each rank: slower than one GPU alone, 4.37 ms
against 2.69 ms on an H200, so it flattered the split to 2.87x.)
"""
import torch.nn.functional as F

from ch04._tensor_parallel_common import TensorParallelMlp


class Replicated(TensorParallelMlp):
    def keep(self, w1, w2):
        self.w1, self.w2 = w1, w2

    def run(self, x):
        return F.gelu(x @ self.w1.T) @ self.w2.T


get_benchmark = Replicated

if __name__ == "__main__":
    from core.single import main
    main(Replicated)
