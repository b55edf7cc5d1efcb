"""Baseline: three kernels, as an eager framework runs `x / x.pow(2).sum(1).sqrt()`.

square (x -> x*x, a full-size temporary), row_sum (one block per row), scale_rows (reads x
again). Each kernel is coalesced and vectorized (float4): the waste is not in any one
kernel but in the 5 passes over HBM where the function needs 2.
"""
from __future__ import annotations

import torch

from ch09._fused_l2norm_common import COLS, ROWS, L2NormBench


class UnfusedL2Norm(L2NormBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        # The temporaries between the kernels, allocated per call as eager code does (the
        # caching allocator hands back the same blocks: no cudaMalloc, no GPU work).
        sq = torch.empty_like(x)
        sums = torch.empty(ROWS, device=x.device)
        self.lib.launch_l2norm_unfused(x, sq, sums, self.y, ROWS, COLS)
        return self.y


get_benchmark = UnfusedL2Norm

if __name__ == "__main__":
    UnfusedL2Norm.main()
