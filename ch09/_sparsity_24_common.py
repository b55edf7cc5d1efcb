"""Shared by the `sparsity_24` pair: Y = W @ X with W pruned to the 2:4 pattern.

W is a (16384 x 8192) bf16 weight (out_features x in_features), X a (8192 x 8192) bf16
block of activations (in_features x tokens), new with every call. setup() prunes W for
*both* sides, keeping the 2 largest-magnitude values of every 4 consecutive ones along K,
so the two sides compute the same function: the baseline multiplies the pruned W as an
ordinary dense matrix (half of its products are by zero), the optimized side hands the
compressed W (the kept values plus 2-bit positions, prepared once in setup(), as a deployed
model stores it) to the sparse tensor cores, which skip the zeros.

The sparse operand comes first: PyTorch's semi-structured tensors compute `W_sparse @ X`
directly (cuSPARSELt or CUTLASS), while `X @ W_sparse` is routed through transposes.

Both sides multiply the same bf16 values with fp32 accumulation and round to bf16, so they
differ only by summation order: one bf16 ulp where the sums straddle a rounding boundary,
at most 2^-7 = 0.8% of the value, inside the default bf16 tolerance (rtol 1e-2).
FLOPs are counted as the work each side does: the dense product's 2 M N K for the baseline
(here), half of it for the sparse side (`optimized_sparsity_24.py`), which skips the zeros.
So neither rate can pass the dense bf16 ceiling by counting products it never computed.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Benchmark, Requirements, Workload

M, K, N = 16384, 8192, 8192  # W: M x K (sparse), X: K x N, Y: M x N


def prune_2_4(w: torch.Tensor) -> torch.Tensor:
    """Zero the 2 smallest-magnitude values in every group of 4 along the last dimension."""
    groups = w.reshape(*w.shape[:-1], w.shape[-1] // 4, 4)
    keep = groups.abs().topk(2, dim=-1).indices
    mask = torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, keep, True)
    return (groups * mask).reshape(w.shape)


class Sparsity24Bench(Benchmark):
    requires = Requirements(min_compute_capability=(8, 0))  # sparse tensor cores: Ampere+

    def setup(self, ctx: BenchContext) -> None:
        self.w = prune_2_4(self.randn(M, K, gen=self.generator(ctx.seed), dtype=torch.bfloat16))
        self.prepare()

    def prepare(self) -> None:
        """Per-variant setup (compression of W); not timed."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(K, N, gen=self.generator(seed), dtype=torch.bfloat16)  # X

    def workload(self) -> Workload:
        return Workload(bytes=2 * (M * K + K * N + M * N), flops=2 * M * N * K, flops_dtype="bf16")
