"""Inputs for the transpose pair: an 8192 x 8192 fp32 matrix (256 MiB in, 256 MiB out)."""
from __future__ import annotations

import torch

from core.benchmark import Workload
from core.cuda_pair import CudaPair

ROWS, COLS = 8192, 8192


class TransposeBench(CudaPair):
    source = "transpose.cu"

    def make_inputs(self) -> None:
        self.src = self.randn(ROWS, COLS)
        self.dst = torch.full((COLS, ROWS), float("nan"), device=self.device)

    def workload(self) -> Workload:
        return Workload(bytes=2 * ROWS * COLS * 4)
