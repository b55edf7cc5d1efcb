"""Inputs for the copy pairs: a 8192 x 8192 fp32 matrix (256 MiB, ~5x a Hopper L2)."""
from __future__ import annotations

import torch

from core.benchmark import Workload
from core.cuda_pair import CudaPair

ROWS, COLS = 8192, 8192


class CopyBench(CudaPair):
    source = "copy.cu"

    def make_inputs(self) -> None:
        self.src = self.randn(ROWS, COLS)
        self.dst = torch.full_like(self.src, float("nan"))  # unwritten elements fail verification

    def workload(self) -> Workload:
        return Workload(bytes=2 * self.src.numel() * 4)  # read once, write once
