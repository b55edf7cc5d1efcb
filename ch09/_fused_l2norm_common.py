"""Shared by the `fused_l2norm` pair: L2-normalize each row of a 16384 x 4096 fp32 matrix.

256 MiB in, 256 MiB out (~5x a Hopper L2): every pass over the matrix goes to HBM. Both
kernels sum each row in the same order, so the outputs agree bit for bit (see
fused_l2norm.cu); setup() also checks the side's kernel once against
torch.nn.functional.normalize, which the pair's own comparison cannot do.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from core.benchmark import Workload
from core.cuda_pair import CudaPair

ROWS, COLS = 16384, 4096


class L2NormBench(CudaPair):
    source = "fused_l2norm.cu"

    def make_inputs(self) -> None:
        self.x = self.randn(ROWS, COLS)
        self.y = torch.full_like(self.x, float("nan"))  # unwritten elements fail verification
        self._check_against_torch()

    def _check_against_torch(self) -> None:
        got = self.run()
        torch.testing.assert_close(got, F.normalize(self.x, dim=1), rtol=1e-5, atol=1e-6,
                                   msg=lambda m: f"fused_l2norm.cu disagrees with F.normalize: {m}")
        self.y.fill_(float("nan"))  # run() must compute y itself (the harness checks)

    def workload(self) -> Workload:
        # The fewest bytes the function needs (read x once, write y once), for both sides:
        # the unfused side's extra passes are the cost being measured.
        return Workload(bytes=2 * ROWS * COLS * 4)
